/* Reset, the vector table, SysTick, the painted stack and semihosting for the C
 * firmware. Newlib (nano) gives memcpy and memset; nothing here needs more of it. */

#include <stdint.h>
#include <string.h>

#include "board.h"

int main(void);

/* The linker script's symbols. */
extern uint32_t _data_load, _data_start, _data_end, _bss_start, _bss_end;
extern uint32_t _stack_bottom, _stack_top;

#define STACK_PATTERN 0xCCCCCCCCu

_Noreturn void Reset_Handler(void) {
#if defined(__ARM_FP)
  /* Full access to the FPU (coprocessors 10 and 11) before any float instruction. */
  *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
  /* Paint the stack below this frame, then set up .data and .bss. */
  uint32_t *p = &_stack_bottom;
  uint32_t *below = (uint32_t *)__builtin_frame_address(0) - 16;
  while (p < below) {
    *(volatile uint32_t *)p++ = STACK_PATTERN;
  }
  memcpy(&_data_start, &_data_load, (size_t)((char *)&_data_end - (char *)&_data_start));
  memset(&_bss_start, 0, (size_t)((char *)&_bss_end - (char *)&_bss_start));
  board_exit(main());
}

static void Fault_Handler(void) {
  board_puts("fault\n");
  board_exit(102);
}

static volatile uint32_t wraps;

static void SysTick_Handler(void) { wraps = wraps + 1; }

typedef void (*handler)(void);

/* The initial stack pointer, then the exceptions: reset, NMI, hard fault, memory
 * management, bus and usage faults, four reserved, SVCall, debug monitor, one reserved,
 * PendSV, SysTick. */
__attribute__((section(".vectors"), used)) static const handler vectors[16] = {
    (handler)&_stack_top, (handler)Reset_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler,        Fault_Handler,          Fault_Handler, 0,
    0,                    0,                      0,             Fault_Handler,
    Fault_Handler,        0,                      Fault_Handler, SysTick_Handler,
};

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define RELOAD 0x00ffffffu
#define INSTRUCTIONS_PER_TICK 40u

void counter_start(void) {
  SYST_RVR = RELOAD;
  SYST_CVR = 0;
  SYST_CSR = 7u; /* the core clock, the interrupt, the counter */
  /* The count is 0 until the first tick loads the reload value. */
  while (SYST_CVR == 0) {
  }
}

uint64_t counter_instructions(void) {
  for (;;) {
    uint32_t before = wraps;
    uint32_t current = SYST_CVR;
    /* At 0 the wrap's exception is due: read again once it has been counted. */
    if (current != 0 && wraps == before) {
      uint64_t ticks = (uint64_t)before * (RELOAD + 1u) + (RELOAD - current);
      return ticks * INSTRUCTIONS_PER_TICK;
    }
  }
}

uint32_t peak_stack(void) {
  const volatile uint32_t *p = &_stack_bottom;
  while (p < &_stack_top && *p == STACK_PATTERN) {
    p++;
  }
  return (uint32_t)((const char *)&_stack_top - (const char *)p);
}

/* A semihosting call: the operation in r0, its argument in r1, `bkpt 0xab`. */
static uint32_t semihost(uint32_t op, const void *arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

#define SYS_OPEN 0x01u
#define SYS_WRITE 0x05u
#define SYS_EXIT 0x18u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u
#define ADP_STOPPED_RUN_TIME_ERROR 0x20023u

/* Writes to the host's standard output: the file ":tt" opened for writing (mode 4). */
void board_puts(const char *s) {
  static uint32_t handle;
  static int opened;
  if (!opened) {
    const uint32_t open_args[3] = {(uint32_t)(uintptr_t)":tt", 4u, 3u};
    handle = semihost(SYS_OPEN, open_args);
    opened = 1;
  }
  const uint32_t write_args[3] = {handle, (uint32_t)(uintptr_t)s, (uint32_t)strlen(s)};
  semihost(SYS_WRITE, write_args);
}

void board_put_line(const char *name, uint64_t value) {
  char digits[21];
  char *d = digits + sizeof digits - 1;
  *d = '\0';
  do {
    *--d = (char)('0' + value % 10u);
    value /= 10u;
  } while (value != 0);
  board_puts(name);
  board_puts(": ");
  board_puts(d);
  board_puts("\n");
}

_Noreturn void board_exit(int status) {
  semihost(SYS_EXIT,
           (const void *)(uintptr_t)(status == 0 ? ADP_STOPPED_APPLICATION_EXIT
                                                 : ADP_STOPPED_RUN_TIME_ERROR));
  for (;;) {
  }
}
