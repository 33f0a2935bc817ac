#!/usr/bin/python3
"""Trains agate's adaptive fusion policy (issue 14, the AGATF paper), offline.

Three parts, as in the paper, each trained on the TRAINING models only (never on the models
benchmarks/fusion evaluates):
  collect   measured group latencies: every training model compiled under rule, none, all and
            --seeds random legal groupings (`agate compile --fusion random,seed=N`), each module
            run with `agate run --profile` (--threads, default 1, recorded with the times); kernel i is
            fused group i, whose nodes and
            explicit cost terms come from fusion_env. Outputs are checked against PyTorch's
            reference (the zoo's .reference.npz): a wrong random grouping is reported, not learned.
  train     (1) an autoencoder over the operators' raw features (core/fusion/embedding.h),
            (2) a cost model: XGBoost (Debian's libxgboost, through its C API) on log latency of a
                group from the sum and max of its operators' embeddings plus the explicit terms
                (core/fusion/group_terms.h),
            (3) a DQN (experience replay, a target network, double-Q targets) whose state is the
                legal walk's decision (core/fusion/adaptive_fusion.h), whose actions are the
                granularities and whose reward is the cost model's predicted time the group saves
                against its operators run alone (shaped: summed over an episode it is minus the
                predicted model latency plus a constant);
                episodes run through fusion_env --interactive, so the legal actions are the
                compiler's own. Learning from demonstrations (DQfD): rule's decisions on the
                training models are replayed with a large-margin loss, so the agent starts at
                rule's granularity and leaves it only for a predicted gain; the state also carries
                rule's action as a one-hot hint, and the compiler adds --rule-bonus ms to its value
                (adaptive_fusion.h says why) (--no-demonstrations: the plain DQN without hint,
                kept as the ablation). The greedy checkpoint with the lowest
                predicted latency relative to rule on the training models is the one written.
            Writes the policy file (encoder + Q network, text) for --target (the machine the
            times were measured on). It refuses to overwrite an existing file (the shipped
            policy) without --force.
  --data may be gzip-compressed (.gz): benchmarks/fusion/data holds the shipped policy's.
Usage:
  tools/fusion/train_fusion.py collect --models resnet18 mobilenet_v3_small convnext_ci vit_ci \
      --seeds 6 --data /tmp/fusion_data.jsonl
  tools/fusion/train_fusion.py train --data benchmarks/fusion/data/x86_64_avx512.jsonl.gz \
      --episodes 480 --target "x86_64 avx512f avx2 fma" --out core/fusion/policies/x86_64_avx512.policy --force
  tools/fusion/train_fusion.py train --data benchmarks/fusion/data/x86_64_avx2.jsonl.gz --threads 2 \
      --episodes 480 --target "x86_64 avx2 fma" --out core/fusion/policies/x86_64_avx2.policy --force
"""
import argparse
import ctypes
import gzip
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ZOO = os.path.expanduser("~/.cache/agate/zoo")
AGATE = os.path.join(ROOT, "bazel-bin", "tools", "cli", "agate")
ENV = os.path.join(ROOT, "bazel-bin", "tools", "fusion", "fusion_env")
TARGET = "llvm -mcpu=native"
MAX_JOIN = 6  # GranularityWalk::kMaxJoin
# The models the policy is trained on; benchmarks/fusion evaluates on others only.
TRAIN_MODELS = ["resnet18", "mobilenet_v3_small", "convnext_ci", "vit_ci"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def env_groups(model, policy):
    return json.loads(run([ENV, os.path.join(ZOO, model + ".onnx"), "--target", TARGET, "--groups", policy]))


def profile(module, repeat, threads):
    """kernel index -> ms (the profile's median per kernel)."""
    ms = {}
    out = run([AGATE, "run", module, "--profile", "--repeat", str(repeat), "--threads", str(threads)])
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1].endswith("%"):
            m = re.match(r"k(\d+)_", parts[3])
            if m:
                ms[int(m.group(1))] = float(parts[0])
    return ms


def matches_reference(model, module, workdir):
    out = os.path.join(workdir, "out.npz")
    run([AGATE, "run", module, "--inputs", os.path.join(ZOO, model + ".inputs.npz"), "--outputs", out])
    got, ref = np.load(out), np.load(os.path.join(ZOO, model + ".reference.npz"))
    worst = 0.0
    for k in ref.files:
        a, b = got[k].astype(np.float64), ref[k].astype(np.float64)
        worst = max(worst, float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-6)))
    return worst


def collect(a):
    with tempfile.TemporaryDirectory() as tmp, open(a.data, "a") as out:
        for model in a.models:
            policies = (["rule", "none", "all"] if a.first_seed == 0 else []) + \
                [f"random,seed={s}" for s in range(a.first_seed, a.first_seed + a.seeds)]
            for policy in policies:
                t0 = time.time()
                env = env_groups(model, policy)
                module = os.path.join(tmp, "m.agm")
                run([AGATE, "compile", os.path.join(ZOO, model + ".onnx"), "-o", module, "--target", TARGET,
                     "--fusion", policy])
                err = matches_reference(model, module, tmp) if a.check else 0.0
                ms = profile(module, a.repeat, a.threads)
                if len(ms) != len(env["groups"]):
                    print(f"{model} {policy}: {len(ms)} kernels for {len(env['groups'])} groups; skipped")
                    continue
                print(f"{model} {policy}: {len(ms)} kernels, {sum(ms.values()):.2f} ms, max rel err {err:.2e}, "
                      f"{time.time() - t0:.0f} s", flush=True)
                if err > 1e-3:
                    print(f"  WRONG OUTPUT under {policy}: not recorded")
                    continue
                out.write(json.dumps({"model": model, "policy": policy, "threads": a.threads,
                                      "features": env["features"],
                                      "ops": env["ops"], "groups": env["groups"],
                                      "ms": [ms[i] for i in range(len(ms))]}) + "\n")
                out.flush()


# --- XGBoost through Debian's libxgboost (C API) -------------------------------------------------

class XGBoost:
    def __init__(self):
        self.lib = ctypes.cdll.LoadLibrary("libxgboost.so")
        self.lib.XGBGetLastError.restype = ctypes.c_char_p
        self.booster = None

    def _check(self, rc):
        if rc != 0:
            raise RuntimeError(self.lib.XGBGetLastError().decode())

    def _matrix(self, x):
        x = np.ascontiguousarray(x, dtype=np.float32)
        handle = ctypes.c_void_p()
        self._check(self.lib.XGDMatrixCreateFromMat(x.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                                    ctypes.c_uint64(x.shape[0]), ctypes.c_uint64(x.shape[1]),
                                                    ctypes.c_float(float("nan")), ctypes.byref(handle)))
        return handle

    def fit(self, x, y, rounds=300):
        d = self._matrix(x)
        y = np.ascontiguousarray(y, dtype=np.float32)
        self._check(self.lib.XGDMatrixSetFloatInfo(d, b"label", y.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                                   ctypes.c_uint64(len(y))))
        self.booster = ctypes.c_void_p()
        self._check(self.lib.XGBoosterCreate(ctypes.byref(d), ctypes.c_uint64(1), ctypes.byref(self.booster)))
        for k, v in [("max_depth", "6"), ("eta", "0.1"), ("subsample", "0.9"), ("seed", "1"), ("nthread", "1"),
                     ("objective", "reg:squarederror")]:
            self._check(self.lib.XGBoosterSetParam(self.booster, k.encode(), v.encode()))
        for i in range(rounds):
            self._check(self.lib.XGBoosterUpdateOneIter(self.booster, ctypes.c_int(i), d))
        self.lib.XGDMatrixFree(d)

    def predict(self, x):
        d = self._matrix(x)
        length = ctypes.c_uint64()
        result = ctypes.POINTER(ctypes.c_float)()
        self._check(self.lib.XGBoosterPredict(self.booster, d, ctypes.c_int(0), ctypes.c_uint(0), ctypes.c_int(0),
                                              ctypes.byref(length), ctypes.byref(result)))
        out = np.array([result[i] for i in range(length.value)], dtype=np.float64)
        self.lib.XGDMatrixFree(d)
        return out


# --- the three parts -------------------------------------------------------------------------------

def train_autoencoder(torch, features, width=8, hidden=16, epochs=1500):
    """Encoder layers [(W, b, act)] with the feature standardization folded into the first layer."""
    x = np.unique(np.array(features, dtype=np.float32), axis=0)
    mean, std = x.mean(0), x.std(0) + 1e-3
    xt = torch.tensor((x - mean) / std)
    torch.manual_seed(1)
    enc = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, width),
                              torch.nn.Tanh())
    dec = torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, x.shape[1]))
    opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=3e-3)
    for epoch in range(epochs):
        opt.zero_grad()
        loss = ((dec(enc(xt)) - xt) ** 2).mean()
        loss.backward()
        opt.step()
    print(f"autoencoder: {len(x)} distinct operators, {x.shape[1]} features -> {width}, "
          f"reconstruction MSE {loss.item():.4f} (standardized; 1.0 = predicting the mean)")
    w1, b1 = enc[0].weight.detach().numpy(), enc[0].bias.detach().numpy()
    w1f = w1 / std[None, :]
    b1f = b1 - w1f @ mean
    return [(w1f, b1f, "tanh"), (enc[2].weight.detach().numpy(), enc[2].bias.detach().numpy(), "tanh")]


def forward(layers, x):
    for w, b, act in layers:
        x = x @ w.T + b
        x = np.tanh(x) if act == "tanh" else np.maximum(x, 0) if act == "relu" else x
    return x


def group_features(emb, nodes, terms, use_embedding=True, use_terms=True):
    e = emb[nodes]
    parts = []
    if use_embedding:
        parts += [e.sum(0), e.max(0)]
    if use_terms:
        parts.append(np.array(terms))
    return np.concatenate(parts)


def train_cost_model(records, encoder, use_embedding=True, use_terms=True, quiet=False):
    rows, ys, models = [], [], []
    for r in records:
        emb = forward(encoder, np.array(r["features"], dtype=np.float64))
        for g, ms in zip(r["groups"], r["ms"]):
            rows.append(group_features(emb, g["nodes"], g["terms"], use_embedding, use_terms))
            ys.append(math.log(max(ms, 1e-4)))
            models.append(r["model"])
    x, y = np.array(rows), np.array(ys)
    # Held-out check: one model left out at a time, pairwise ranking accuracy on its groups.
    names = sorted(set(models))
    accuracies = []
    for held in names:
        train = np.array([m != held for m in models])
        if train.all() or not train.any():
            continue
        xgb = XGBoost()
        xgb.fit(x[train], y[train])
        p, t = xgb.predict(x[~train]), y[~train]
        rng = np.random.default_rng(0)
        i, j = rng.integers(0, len(t), 4000), rng.integers(0, len(t), 4000)
        keep = np.abs(t[i] - t[j]) > math.log(1.2)  # pairs that differ by more than 20%
        accuracies.append(float(np.mean((p[i] > p[j])[keep] == (t[i] > t[j])[keep])))
    xgb = XGBoost()
    xgb.fit(x, y)
    if not quiet:
        print(f"cost model: {len(y)} measured groups from {len(records)} compiled modules; leave-one-model-out "
              f"pairwise ranking accuracy {np.mean(accuracies):.3f} ({', '.join(f'{a:.2f}' for a in accuracies)})")
    return xgb, float(np.mean(accuracies)) if accuracies else float("nan")


class Env:
    """One fusion_env --interactive process per model: the compiler's own legal walk."""

    def __init__(self, model):
        self.model = model
        self.proc = None
        self.started = False
        first = self._start()
        self.features = np.array(first["features"], dtype=np.float64)
        self.singletons = first["singletons"]

    def _start(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
        self.proc = subprocess.Popen([ENV, os.path.join(ZOO, self.model + ".onnx"), "--target", TARGET,
                                      "--interactive"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        return json.loads(self.proc.stdout.readline())

    def reset(self):
        if not self.started:
            self.started = True
            return json.loads(self.proc.stdout.readline())
        return self.step(-1)

    def step(self, k):
        self.proc.stdin.write(f"{k}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()


def state_of(emb, decision, rule_k=None):
    """adaptive_fusion.h's state layout; with `rule_k` (the rule hint) the one-hot of rule's action follows."""
    e = emb.shape[1]
    s = np.zeros(e * (1 + MAX_JOIN) + 1 + MAX_JOIN + (MAX_JOIN + 1 if rule_k is not None else 0))
    if rule_k is not None:
        s[e * (1 + MAX_JOIN) + 1 + MAX_JOIN + min(max(rule_k, 0), MAX_JOIN)] = 1
    s[:e] = emb[decision["seed"]]
    chain = decision["chain"]
    for i, v in enumerate(chain[:MAX_JOIN]):
        s[e * (1 + i):e * (2 + i)] = emb[v]
        s[e * (1 + MAX_JOIN) + 1 + i] = 1
    s[e * (1 + MAX_JOIN)] = len(chain) / MAX_JOIN
    return s


def rule_action(group_of, decision):
    """The granularity at this decision that follows `rule`: the longest prefix of the chain in the seed's rule group
    (the walk offers operators in topological order, so rule's group is a prefix of the chain wherever the walk can
    form it at all)."""
    seed = group_of.get(decision["seed"])
    k = 0
    for v in decision["chain"][:MAX_JOIN]:
        if seed is None or group_of.get(v) != seed:
            break
        k += 1
    return k


def train_dqn(torch, models, encoder, cost, episodes, rule_ms, rule_groups, checkpoint_every=20, seed=1,
              pretrain_steps=3000, margin=0.005, demo_weight=0.5, demonstrations=True):
    """DQN from demonstrations (Hester et al., DQfD): `rule`'s own decisions are kept in a demonstration buffer that
    is never overwritten; the network is first trained on them alone (TD loss plus a large-margin loss that puts
    rule's action `margin` ms above the others), then every batch mixes agent and demonstration transitions. So the
    agent starts from rule's granularity and leaves it only where the cost model's predicted return says a different
    granularity pays more than the margin; without demonstrations the greedy checkpoints ended 1-7% behind rule by
    their own cost model (benchmarks/fusion/TRAINING_LOG_no_demonstrations.txt)."""
    random.seed(seed)
    torch.manual_seed(seed)
    envs = [Env(m) for m in models]
    embs = {env.model: forward(encoder, env.features) for env in envs}
    e = encoder[-1][0].shape[0]
    hint = demonstrations  # the rule hint goes with the demonstrations (adaptive_fusion.h says why)
    width = e * (1 + MAX_JOIN) + 1 + MAX_JOIN + (MAX_JOIN + 1 if hint else 0)

    def state(model, decision):
        return state_of(embs[model], decision, rule_action(rule_groups[model], decision) if hint else None)

    def net():
        return torch.nn.Sequential(torch.nn.Linear(width, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                                   torch.nn.ReLU(), torch.nn.Linear(64, MAX_JOIN + 1))
    q, target = net(), net()
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=1e-3)
    replay, demos, steps = [], [], 0

    cache = {}

    def predicted_ms(model, closed):
        key = (model, tuple(closed["nodes"]))
        if key not in cache:
            x = group_features(embs[model], closed["nodes"], closed["terms"])[None, :]
            cache[key] = math.exp(cost.predict(x)[0])
        return cache[key]

    def learn_step(batch, demo_count):
        """One gradient step on `batch`; its last `demo_count` transitions are demonstrations."""
        nonlocal steps
        bs = torch.tensor(np.array([b[0] for b in batch]), dtype=torch.float32)
        ba = torch.tensor([b[1] for b in batch])
        br = torch.tensor([b[2] for b in batch], dtype=torch.float32)
        bs2 = torch.tensor(np.array([b[3] for b in batch]), dtype=torch.float32)
        mask = torch.tensor([[i < b[4] for i in range(MAX_JOIN + 1)] for b in batch])
        bd = torch.tensor([b[5] for b in batch], dtype=torch.float32)
        with torch.no_grad():
            online = q(bs2).masked_fill(~mask, -1e9).argmax(1)  # double DQN: online picks, target values
            next_q = target(bs2).gather(1, online[:, None])[:, 0]
            y = br + (1 - bd) * next_q
        values = q(bs)
        pred = values.gather(1, ba[:, None])[:, 0]
        loss = torch.nn.functional.smooth_l1_loss(pred, y)
        if demo_count:
            d0 = len(batch) - demo_count
            legal_now = torch.tensor([[i < b[6] for i in range(MAX_JOIN + 1)] for b in batch[d0:]])
            dv = values[d0:]
            bonus = torch.full_like(dv, margin).scatter(1, ba[d0:, None], 0.0)
            best = (dv + bonus).masked_fill(~legal_now, -1e9).max(1).values
            loss = loss + demo_weight * (best - pred[d0:]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        if steps % 200 == 0:
            target.load_state_dict(q.state_dict())

    def run_episode(env, epsilon, learn, demonstrate=False):
        d = env.reset()
        total, groups = 0.0, 0
        while not d.get("done"):
            s = state(env.model, d)
            legal = len(d["chain"]) + 1
            if demonstrate:
                k = rule_action(rule_groups[env.model], d)
            elif random.random() < epsilon:
                k = random.randrange(legal)
            else:
                with torch.no_grad():
                    k = int(torch.argmax(q(torch.tensor(s, dtype=torch.float32))[:legal]))
            nd = env.step(k)
            ms = predicted_ms(env.model, nd["closed"])
            # Shaped reward: the time the group saves against running each of its operators alone. Summed over
            # an episode it is (time with no fusion - time of the episode's grouping), so the optimal policy is
            # unchanged, but a join is credited when it is made, not when the skipped kernels never come.
            alone = sum(predicted_ms(env.model, {"nodes": [v], "terms": env.singletons[v]})
                        for v in nd["closed"]["nodes"])
            total += ms
            groups += 1
            done = bool(nd.get("done"))
            s2 = state(env.model, nd) if not done else np.zeros_like(s)
            legal2 = len(nd["chain"]) + 1 if not done else 1
            transition = (s, k, alone - ms, s2, legal2, done, legal)
            if demonstrate:
                demos.append(transition)
            else:
                replay.append(transition)
                if len(replay) > 50000:
                    replay.pop(0)
            if learn and len(replay) >= 256:
                learn_step(random.sample(replay, 48) + random.sample(demos, min(16, len(demos))),
                           min(16, len(demos)))
            d = nd
        return total, groups

    def evaluate():
        """The greedy policy on every training model: geometric mean of predicted(policy) / predicted(rule)."""
        greedy = {env.model: run_episode(env, 0.0, False) for env in envs}
        ratio = math.exp(np.mean([math.log(greedy[m][0] / rule_ms[m]) for m in greedy]))
        return ratio, greedy

    # The Q network kept is the greedy checkpoint whose predicted latency on the training models, relative to
    # rule's groups under the same cost model, is lowest: DQN's greedy policy oscillates between checkpoints
    # (TRAINING_LOG_no_demonstrations.txt), and the last one is not the best. Only training models take part.
    if not demonstrations:  # the ablation: plain double DQN from an untrained network
        pretrain_steps = 0
    for env in envs if demonstrations else []:
        total, groups = run_episode(env, 0.0, False, demonstrate=True)
        print(f"  demonstration on {env.model}: {groups} groups, predicted {total:.2f} ms (rule's own groups: "
              f"{rule_ms[env.model]:.2f} ms)", flush=True)
    print(f"  {len(demos)} demonstration transitions from rule's groups", flush=True)
    for _ in range(pretrain_steps):
        learn_step(random.sample(demos, min(64, len(demos))), min(64, len(demos)))
    ratio, greedy = evaluate()
    print(f"  after pretraining on the demonstrations: greedy predicted / rule predicted {ratio:.4f}", flush=True)
    best = (ratio, {k: v.clone() for k, v in q.state_dict().items()}, greedy, -1)
    for ep in range(episodes):
        epsilon = max(0.05, 1.0 - ep / (0.7 * episodes))
        env = envs[ep % len(envs)]
        total, groups = run_episode(env, epsilon, True)
        if ep % 20 == 0 or ep == episodes - 1:
            print(f"  episode {ep}: {env.model} epsilon {epsilon:.2f} predicted {total:.2f} ms in {groups} groups",
                  flush=True)
        if (ep + 1) % checkpoint_every == 0 or ep == episodes - 1:
            ratio, greedy = evaluate()
            print(f"  checkpoint after episode {ep}: greedy predicted / rule predicted {ratio:.4f} (geometric mean)",
                  flush=True)
            if ratio < best[0]:
                best = (ratio, {k: v.clone() for k, v in q.state_dict().items()}, greedy, ep)
    for env in envs:
        env.close()
    print(f"kept the checkpoint after episode {best[3]}: predicted {best[0]:.4f} x rule on the training models")
    q.load_state_dict(best[1])
    layers = [(l.weight.detach().numpy(), l.bias.detach().numpy(), act)
              for l, act in [(q[0], "relu"), (q[2], "relu"), (q[4], "linear")]]
    return layers, best[2], hint


def write_policy(path, encoder, qnet, n_features, target, hint=False, rule_bonus=0.0):
    lines = ["agate-fusion-policy 1", f"target {target}", f"max_join {MAX_JOIN}"] + \
        ([f"hint rule {rule_bonus:.7g}"] if hint else []) + [f"features {n_features}"]
    for name, layers in [("encoder", encoder), ("q", qnet)]:
        for w, b, act in layers:
            lines.append(f"dense {name} {w.shape[1]} {w.shape[0]} {act}")
            lines.append(" ".join(f"{v:.7g}" for v in w.reshape(-1)))
            lines.append(" ".join(f"{v:.7g}" for v in b))
    lines.append("end")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def train(a):
    import torch
    torch.set_num_threads(1)
    if os.path.exists(a.out) and not a.force:
        sys.exit(f"{a.out} exists (the shipped policy?): give --force to overwrite it")
    with (gzip.open(a.data, "rt") if a.data.endswith(".gz") else open(a.data)) as f:
        records = [json.loads(line) for line in f]
    # Records without "threads" predate the option and were profiled on 1 thread.
    records = [r for r in records if r["model"] in a.models and r.get("threads", 1) == a.threads]
    assert records, f"no records for {a.models} at {a.threads} thread(s) in {a.data}"
    features = [f for r in records if r["policy"] == "rule" for f in r["features"]]
    encoder = train_autoencoder(torch, features)
    cost, _ = train_cost_model(records, encoder)
    # Ablations of the cost model: the same held-out ranking without embeddings / without terms.
    _, no_emb = train_cost_model(records, encoder, use_embedding=False, quiet=True)
    _, no_terms = train_cost_model(records, encoder, use_terms=False, quiet=True)
    print(f"cost model ablation (held-out pairwise ranking accuracy): without embeddings {no_emb:.3f}, "
          f"without explicit terms {no_terms:.3f}")
    rule_ms, rule_records = {}, {}
    for model in a.models:
        rule = [r for r in records if r["model"] == model and r["policy"] == "rule"]
        assert rule, f"no rule record for {model} in {a.data}"
        emb = forward(encoder, np.array(rule[0]["features"]))
        rule_ms[model] = sum(math.exp(cost.predict(group_features(emb, g["nodes"], g["terms"])[None, :])[0])
                             for g in rule[0]["groups"])
        rule_records[model] = rule[0]
    rule_groups = {m: {v: i for i, g in enumerate(rule_records[m]["groups"]) for v in g["nodes"]} for m in a.models}
    qnet, greedy, hint = train_dqn(torch, a.models, encoder, cost, a.episodes, rule_ms, rule_groups, margin=a.demo_margin,
                             demonstrations=a.demonstrations)
    for model, (total, groups) in greedy.items():
        rule = rule_records[model]
        print(f"trained policy on {model}: predicted {total:.2f} ms in {groups} groups; rule predicted "
              f"{rule_ms[model]:.2f} ms (measured {sum(rule['ms']):.2f} ms) in {len(rule['groups'])} groups")
    write_policy(a.out, encoder, qnet, len(features[0]), a.target, hint, a.rule_bonus)
    print(f"wrote {a.out}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--models", nargs="+", default=TRAIN_MODELS)
    c.add_argument("--seeds", type=int, default=6, help="random legal groupings per model")
    c.add_argument("--first-seed", type=int, default=0,
                   help="the first random grouping's seed; above 0 (adding to a data file), rule/none/all are not "
                        "collected again")
    c.add_argument("--repeat", type=int, default=10)
    c.add_argument("--threads", type=int, default=1, help="the runtime's threads while profiling")
    c.add_argument("--data", required=True)
    c.add_argument("--no-check", dest="check", action="store_false")
    t = sub.add_parser("train")
    t.add_argument("--models", nargs="+", default=TRAIN_MODELS)
    t.add_argument("--data", required=True)
    t.add_argument("--episodes", type=int, default=200)
    t.add_argument("--threads", type=int, default=1,
                   help="train on the records profiled at this thread count (collect --threads)")
    t.add_argument("--out", required=True)
    t.add_argument("--force", action="store_true", help="overwrite an existing policy file")
    t.add_argument("--demo-margin", type=float, default=0.001,
                   help="ms by which the large-margin loss puts rule's action above the others (DQfD)")
    t.add_argument("--rule-bonus", type=float, default=0.05,
                   help="ms the compiler adds to the value of rule's action (the trust margin, adaptive_fusion.h)")
    t.add_argument("--no-demonstrations", dest="demonstrations", action="store_false",
                   help="the ablation: no demonstrations of rule's decisions (plain double DQN)")
    t.add_argument("--target", required=True,
                   help="the policy's target line: the architecture and the LLVM features of the machine the "
                        "collected times were measured on (core/fusion/adaptive_fusion.h)")
    a = p.parse_args()
    collect(a) if a.command == "collect" else train(a)


if __name__ == "__main__":
    main()
