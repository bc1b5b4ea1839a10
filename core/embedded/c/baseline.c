/* The C firmware without sgld: the same stream, counters and output, so that the
 * difference of the two images' sizes is what the library adds. */

#include <stdint.h>

#include "board.h"
#include "stream.h"

int main(void) {
  counter_start();
  uint8_t idx[STREAM_INDICES];
  float label, labels = 0.0f;
  stream st = stream_training();
  uint64_t t0 = counter_instructions();
  for (uint32_t i = 0; i < STREAM_TRAINING; i++) {
    stream_next(&st, idx, &label);
    labels += label;
  }
  uint64_t t1 = counter_instructions();
  board_put_line("baseline: label sum + 30000", (uint64_t)(labels + 30000.0f));
  board_put_line("baseline: instructions", t1 - t0);
  board_put_line("stack_bytes", peak_stack());
  return 0;
}
