/* What the C firmware images share: an instruction counter on SysTick, the peak of a
 * painted stack and semihosting output (QEMU's mps2-an386 and mps2-an385). */

#ifndef BOARD_H
#define BOARD_H

#include <stdint.h>

/* Starts SysTick on the core clock, wrapping every 2^24 ticks. */
void counter_start(void);
/* Instructions since counter_start (QEMU's -icount shift=0: one a nanosecond; SysTick
 * at 25 MHz: 40 a tick). */
uint64_t counter_instructions(void);
/* The deepest the stack has been since reset, in bytes. */
uint32_t peak_stack(void);
/* Writes a string to the host's console. */
void board_puts(const char *s);
/* Writes "name: value\n". */
void board_put_line(const char *name, uint64_t value);
/* Ends the program under QEMU: status 0 success, anything else failure. */
_Noreturn void board_exit(int status);

#endif
