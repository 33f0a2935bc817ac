/* Reset for the example firmware on QEMU's Arm MPS boards: the vector table the core boots
 * from, the FPU enabled (CP10/CP11 full access), then newlib's start code (rdimon: semihosting
 * for stdio and files, .bss cleared, main called, exit status passed to QEMU). */
extern void _start(void);
extern unsigned int __stack_top;

static void hang(void) {
  for (;;) {
  }
}

static void reset(void) {
  *(volatile unsigned int*)0xE000ED88u |= 0xFu << 20; /* CPACR: CP10, CP11 */
  __asm__ volatile("dsb\n isb");
  _start();
}

/* Initial stack pointer, reset, NMI, HardFault, MemManage, BusFault, UsageFault, SecureFault,
 * reserved, SVCall, DebugMonitor, reserved, PendSV, SysTick. */
__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
    (void (*)(void))&__stack_top, reset, hang, hang, hang, hang, hang, hang, 0, 0, 0, hang, hang, 0, hang, hang};
