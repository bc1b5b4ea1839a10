/* The online learner from C on a Cortex-M4F (or, built for the M3, a Cortex-M3): 30,000
 * examples of the a9a-shaped stream through sgld_learner_push, then the posterior
 * mean's accuracy on 5,000 held-out examples through sgld_learner_margin. Prints the
 * same lines as the Rust firmware. */

#include <stdint.h>

#include "board.h"
#include "sgld_learner.h"
#include "stream.h"

/* The learner's memory, in .bss. */
static sgld_learner learner;

_Noreturn void sgld_panic(void) {
  board_puts("panic\n");
  board_exit(101);
}

static void fail(const char *what, int status, int code) {
  board_puts("error: ");
  board_puts(what);
  board_puts(": ");
  board_puts(sgld_status_message(status));
  board_puts("\n");
  board_exit(code);
}

int main(void) {
  counter_start();
  int status = sgld_learner_init(&learner, 2011);
  if (status != SGLD_OK) {
    fail("init", status, 2);
  }
  uint8_t idx[STREAM_INDICES];
  float label;

  /* The stream and the learner, then the stream alone. */
  stream st = stream_training();
  uint64_t t0 = counter_instructions();
  for (uint32_t i = 0; i < STREAM_TRAINING; i++) {
    stream_next(&st, idx, &label);
    status = sgld_learner_push(&learner, idx, STREAM_INDICES, label);
    if (status != SGLD_OK) {
      fail("push", status, 3);
    }
  }
  uint64_t t1 = counter_instructions();
  st = stream_training();
  for (uint32_t i = 0; i < STREAM_TRAINING; i++) {
    stream_next(&st, idx, &label);
    __asm__ volatile("" : : "r"(idx), "r"(&label) : "memory");
  }
  uint64_t t2 = counter_instructions();
  uint64_t spent = t1 - t0, stream_alone = t2 - t1;
  uint64_t per_example = (spent > stream_alone ? spent - stream_alone : 0) / STREAM_TRAINING;

  uint32_t correct = 0;
  st = stream_held_out();
  for (uint32_t i = 0; i < STREAM_HELD_OUT; i++) {
    float margin;
    stream_next(&st, idx, &label);
    status = sgld_learner_margin(&learner, idx, STREAM_INDICES, &margin);
    if (status != SGLD_OK) {
      fail("margin", status, 3);
    }
    correct += (margin > 0.0f) == (label > 0.0f);
  }
  uint32_t permille = correct * 1000u / STREAM_HELD_OUT;
#if defined(__ARM_FP)
  board_puts("online SGLD from C on a Cortex-M4F: d = 124, batch 10, window 256, 30000 examples\n");
#else
  board_puts("online SGLD from C on a Cortex-M3 (no FPU): d = 124, batch 10, window 256, 30000 examples\n");
#endif
  char accuracy[] = "accuracy: 0.000\n";
  accuracy[10] = (char)('0' + permille / 1000u);
  accuracy[12] = (char)('0' + permille / 100u % 10u);
  accuracy[13] = (char)('0' + permille / 10u % 10u);
  accuracy[14] = (char)('0' + permille % 10u);
  board_puts(accuracy);
  board_put_line("instructions_per_example", per_example);
  board_put_line("stack_bytes", peak_stack());
  return permille >= 890u ? 0 : 1;
}
