#include "stream.h"

static uint32_t next_u32(stream *st) {
  st->s = st->s * 6364136223846793005u + 1442695040888963407u;
  return (uint32_t)(st->s >> 33);
}

/* The true coefficient of feature j: a fixed sparse pattern in [-1.5, 1.5]. */
static float beta(uint8_t j) {
  return j % 3u == 0 ? (float)((j * 37u) % 31u) / 10.0f - 1.5f : 0.0f;
}

void stream_next(stream *st, uint8_t idx[STREAM_INDICES], float *label) {
  uint32_t k = 0;
  while (k < STREAM_ACTIVE) {
    uint8_t j = (uint8_t)(next_u32(st) % STREAM_FEATURES);
    uint32_t i = 0;
    while (i < k && idx[i] != j) {
      i++;
    }
    if (i == k) {
      idx[k++] = j;
    }
  }
  /* Insertion sort, ascending. */
  for (uint32_t i = 1; i < STREAM_ACTIVE; i++) {
    uint8_t v = idx[i];
    uint32_t m = i;
    while (m > 0 && idx[m - 1] > v) {
      idx[m] = idx[m - 1];
      m--;
    }
    idx[m] = v;
  }
  idx[STREAM_ACTIVE] = (uint8_t)STREAM_FEATURES; /* the bias */
  float z = 0.0f;
  for (uint32_t i = 0; i < STREAM_ACTIVE; i++) {
    z += beta(idx[i]);
  }
  z -= 0.2f;
  int flip = next_u32(st) % 100u < 8u;
  *label = (z > 0.0f) != flip ? 1.0f : -1.0f;
}
