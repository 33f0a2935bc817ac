package dev.agate;

import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;

/**
 * The safety net behind {@code close()}: runs a cleanup action once its owner
 * becomes unreachable, on a daemon thread, or at once when closed explicitly.
 *
 * <p>Why not {@code java.lang.ref.Cleaner}: Android has it only from API 33;
 * this is the same mechanism (a phantom reference and a queue) and works on every
 * Android version and on Java 8+. The action must not refer to its owner, or the
 * owner never becomes unreachable.
 */
final class Reclaimer {
  private static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<Object>();
  /** Keeps registrations reachable until they ran. */
  private static final Set<Registration> LIVE = Collections.synchronizedSet(new HashSet<Registration>());
  /** How many actions ran because their owner was collected (tests read it). */
  private static volatile long reclaimedByGc;

  static {
    Thread thread = new Thread(new Runnable() {
      @Override
      public void run() {
        while (true) {
          try {
            Registration r = (Registration) QUEUE.remove();
            if (r.clean()) reclaimedByGc++;
          } catch (InterruptedException e) {
            // A daemon thread: keep serving until the VM exits.
          } catch (RuntimeException e) {
            // A failing cleanup must not stop the others.
          }
        }
      }
    }, "agate-reclaimer");
    thread.setDaemon(true);
    thread.start();
  }

  private Reclaimer() {}

  /** A registered action; {@link #clean()} runs it at most once. */
  static final class Registration extends PhantomReference<Object> {
    private Runnable action;

    private Registration(Object owner, Runnable action) {
      super(owner, QUEUE);
      this.action = action;
    }

    /** Runs the action if it has not run; true if this call ran it. */
    boolean clean() {
      Runnable a;
      synchronized (this) {
        a = action;
        action = null;
      }
      if (a == null) return false;
      LIVE.remove(this);
      clear();
      a.run();
      return true;
    }
  }

  static Registration register(Object owner, Runnable action) {
    Registration r = new Registration(owner, action);
    LIVE.add(r);
    return r;
  }

  static long reclaimedByGc() {
    return reclaimedByGc;
  }
}
