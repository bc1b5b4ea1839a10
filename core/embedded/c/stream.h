/* The a9a-shaped stream of sgld-embedded-learner's Stream, example for example: 13
 * active features of 123 (a 64-bit LCG) plus the bias, labels from a fixed sparse
 * coefficient vector with 8% of them flipped. */

#ifndef STREAM_H
#define STREAM_H

#include <stdint.h>

#define STREAM_FEATURES 123u
#define STREAM_ACTIVE 13u
/* Indices an example has: the active features and the bias. */
#define STREAM_INDICES (STREAM_ACTIVE + 1u)
#define STREAM_TRAINING 30000u
#define STREAM_HELD_OUT 5000u

typedef struct stream {
  uint64_t s;
} stream;

static inline stream stream_training(void) { return (stream){7}; }
static inline stream stream_held_out(void) { return (stream){99}; }

/* The next example: STREAM_INDICES sorted indices (the bias last) and its label. */
void stream_next(stream *st, uint8_t idx[STREAM_INDICES], float *label);

#endif
