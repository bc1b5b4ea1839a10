/* sgld's online learner for C firmware: link libsgld_c.a (built by core/embedded/run.sh,
 * or `cargo build --release -Zbuild-std=core --target <yours> -p sgld-c` in
 * core/embedded) and include this header.
 *
 * A Bayesian logistic regression learned online by SGLD: SGLD_LEARNER_DIM parameters
 * (binary features and a bias), one step per arriving example on a mini-batch of 10
 * drawn from a window of the 256 most recent examples, Laplace(1) prior, the step size
 * falling from 1e-3 to 1e-5 over 30,000 examples, the step-size-weighted posterior mean
 * from the 15,000th on. No heap: the learner lives in an sgld_learner the firmware owns.
 *
 *     static sgld_learner learner;              // .bss: no initialiser, no heap
 *     if (sgld_learner_init(&learner, 2011) != SGLD_OK) { ... }
 *     uint8_t x[] = {3, 17, 42, 123};           // active features, the bias (123) too
 *     int status = sgld_learner_push(&learner, x, 4, +1.0f);
 *     if (status < 0) puts(sgld_status_message(status));
 *     float margin;                             // P(y = +1) = 1 / (1 + exp(-margin))
 *     sgld_learner_margin(&learner, x, 4, &margin);
 *
 * Every function returns SGLD_OK (0), SGLD_SKIPPED (1) or a negative error code, and a
 * refused call changes nothing. The firmware defines sgld_panic, which the library calls
 * should it ever panic (its fuzz targets check that it does not).
 *
 * Floats use the target's float ABI: build C with -mfloat-abi=hard -mfpu=fpv4-sp-d16
 * for thumbv7em-none-eabihf (Cortex-M4F), -mfloat-abi=soft for thumbv7m-none-eabi
 * (Cortex-M3). core/embedded/run.sh checks this header against the library's symbols
 * and constants. */

#ifndef SGLD_LEARNER_H
#define SGLD_LEARNER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
#define SGLD_ALIGNED8 alignas(8)
#define SGLD_NORETURN [[noreturn]]
#else
#define SGLD_ALIGNED8 _Alignas(8)
#define SGLD_NORETURN _Noreturn
#endif

/* Parameters: 123 binary features and the bias (index 123). */
#define SGLD_LEARNER_DIM 124
/* Active feature indices one example may have, the bias's included. */
#define SGLD_LEARNER_MAX_ACTIVE 16

/* Bytes of one learner, on 32-bit and on 64-bit targets (the f32 learner's size; the
 * fixed-point learner of a core without an FPU needs less). */
#if UINTPTR_MAX == 0xffffffffu
#define SGLD_LEARNER_BYTES 9808
#else
#define SGLD_LEARNER_BYTES 9912
#endif

/* Storage for one learner: opaque, aligned to 8 bytes. It must stay at its address
 * while in use (do not copy or move it), and be used by one caller at a time. A zeroed
 * one (a static) reads as not initialised. */
typedef struct sgld_learner {
  SGLD_ALIGNED8 unsigned char opaque[SGLD_LEARNER_BYTES];
} sgld_learner;

/* Status codes. */
#define SGLD_OK 0                   /* success */
#define SGLD_SKIPPED 1              /* the step's gradient or proposal was not finite: theta kept */
#define SGLD_ERR_NULL (-1)          /* a required pointer is null */
#define SGLD_ERR_ALIGNMENT (-2)     /* a pointer is not aligned */
#define SGLD_ERR_NOT_INITIALISED (-3) /* sgld_learner_init has not succeeded on it */
#define SGLD_ERR_LENGTH (-4)        /* more than SGLD_LEARNER_MAX_ACTIVE indices, or a
                                       means buffer not SGLD_LEARNER_DIM long */
#define SGLD_ERR_INDEX (-5)         /* a feature index >= SGLD_LEARNER_DIM */
#define SGLD_ERR_INVALID (-6)       /* a label other than -1 or +1 */
#define SGLD_ERR_NON_FINITE (-7)    /* a NaN or infinite value */

/* Starts a learner in *learner from theta = 0, replacing whatever it held. */
int sgld_learner_init(sgld_learner *learner, uint64_t seed);

/* One arriving example (count feature indices, label -1 or +1) and one SGLD step. */
int sgld_learner_push(sgld_learner *learner, const uint8_t *indices, size_t count,
                      float label);

/* The posterior mean of every parameter into out[0..len), len == SGLD_LEARNER_DIM
 * (NaN before the estimate's first example, half-way through the schedule). */
int sgld_learner_means(const sgld_learner *learner, float *out, size_t len);

/* The posterior mean's margin over an example's feature indices into *margin. */
int sgld_learner_margin(const sgld_learner *learner, const uint8_t *indices, size_t count,
                        float *margin);

/* A one-line description of a status code (a static string). */
const char *sgld_status_message(int status);

/* Defined by the firmware: called should the library panic; must not return. */
SGLD_NORETURN void sgld_panic(void);

#ifdef __cplusplus
}
#endif

#endif /* SGLD_LEARNER_H */
