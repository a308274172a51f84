/* Allocation functions of compiled code, which count what it allocates.
 *
 * The llvm stage runs finalize-memref-to-llvm{use-generic-functions}, so every
 * memref.alloc / memref.dealloc of the code calls the three functions below
 * instead of malloc / aligned_alloc / free. This file is compiled and linked
 * into every lib.so (lowerline.objects.link_shared_library); they are hidden,
 * so each library uses its own and keeps its own counters.
 *
 * Each block is preceded by a header with its size and the address to free,
 * so that free knows how many bytes go. The counters are atomic: the code
 * allocates on OpenMP threads too.
 *
 *   lowerline_memory_stats(int64_t out[3])  live bytes, peak live bytes and
 *                                           allocations since the last reset
 *   lowerline_memory_reset()                peak := live, allocations := 0
 *   lowerline_kernel_times(ns, calls, n)    per-kernel timers (explorer builds)
 *
 *   lowerline_set_team_limit(limit)         caps OpenMP team sizes (see below)
 *
 * It also defines __truncsfbf2 (see below), for the same libraries, and the
 * slot where failed run-time checks go (lowerline_assert_failed, below).
 *
 * Built with -DLOWERLINE_STANDALONE (lowerline.export's static libraries), it
 * has no allocation functions and no counters: exported code allocates
 * nothing (lowerline.driver.standalone checks it), and a library that called
 * them would not link rather than malloc at run time.
 */

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORT __attribute__((visibility("default")))

#ifndef LOWERLINE_STANDALONE

typedef struct {
  void *base;   /* what malloc / aligned_alloc returned */
  int64_t size; /* bytes the code asked for */
} header_t;

/* A multiple of malloc's alignment (16 on x86_64 and aarch64). */
#define HEADER_BYTES 16
_Static_assert(sizeof(header_t) <= HEADER_BYTES, "header too large");

static _Atomic int64_t live_bytes;
static _Atomic int64_t peak_bytes;
static _Atomic int64_t allocations;

static void *track(void *base, char *block, uint64_t size) {
  if (!base)
    return NULL;
  header_t *header = (header_t *)(block - HEADER_BYTES);
  header->base = base;
  header->size = (int64_t)size;
  int64_t live = atomic_fetch_add(&live_bytes, (int64_t)size) + (int64_t)size;
  int64_t peak = atomic_load(&peak_bytes);
  while (live > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, live)) {
  }
  atomic_fetch_add(&allocations, 1);
  return block;
}

HIDDEN void *_mlir_memref_to_llvm_alloc(uint64_t size) {
  char *base = malloc(size + HEADER_BYTES);
  return track(base, base + HEADER_BYTES, size);
}

HIDDEN void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size) {
  /* The block starts at a multiple of the alignment (a power of two), with
   * room for the header before it. */
  uint64_t offset = alignment < HEADER_BYTES ? HEADER_BYTES : alignment;
  uint64_t total = size + offset;
  if (total % offset) /* aligned_alloc wants a multiple of the alignment */
    total += offset - total % offset;
  char *base = aligned_alloc(offset, total);
  return track(base, base + offset, size);
}

HIDDEN void _mlir_memref_to_llvm_free(void *block) {
  if (!block)
    return;
  header_t *header = (header_t *)((char *)block - HEADER_BYTES);
  atomic_fetch_sub(&live_bytes, header->size);
  free(header->base);
}

EXPORT void lowerline_memory_stats(int64_t out[3]) {
  out[0] = atomic_load(&live_bytes);
  out[1] = atomic_load(&peak_bytes);
  out[2] = atomic_load(&allocations);
}

EXPORT void lowerline_memory_reset(void) {
  atomic_store(&peak_bytes, atomic_load(&live_bytes));
  atomic_store(&allocations, 0);
}

/* Per-kernel timers (lowerline-time-kernels, explorer builds only).
 *
 * The pass brackets kernel K of the entry function with
 * lowerline_kernel_clock() before it and lowerline_kernel_done(K, start)
 * after it, on the calling thread (an OpenMP region is timed whole). The
 * nanoseconds and calls add up per kernel until lowerline_kernel_times
 * copies them out and clears them. Atomic: calls may run at the same time.
 * LOWERLINE_MAX_KERNELS is the pass's MAX_KERNELS. */

#define LOWERLINE_MAX_KERNELS 1024
static _Atomic int64_t kernel_ns[LOWERLINE_MAX_KERNELS];
static _Atomic int64_t kernel_calls[LOWERLINE_MAX_KERNELS];

HIDDEN int64_t lowerline_kernel_clock(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

HIDDEN void lowerline_kernel_done(int64_t kernel, int64_t start) {
  if (kernel < 0 || kernel >= LOWERLINE_MAX_KERNELS)
    return;
  atomic_fetch_add(&kernel_ns[kernel], lowerline_kernel_clock() - start);
  atomic_fetch_add(&kernel_calls[kernel], 1);
}

/* Copies the first n kernels' nanoseconds and calls out and clears them;
 * returns how many kernels the table holds. */
EXPORT int64_t lowerline_kernel_times(int64_t *ns, int64_t *calls, int64_t n) {
  for (int64_t k = 0; k < n && k < LOWERLINE_MAX_KERNELS; ++k) {
    ns[k] = atomic_exchange(&kernel_ns[k], 0);
    calls[k] = atomic_exchange(&kernel_calls[k], 0);
  }
  return LOWERLINE_MAX_KERNELS;
}
/* Team sizes of OpenMP regions (lowerline.runtime.teams).
 *
 * convert-scf-to-openmp{num-threads=N} gives every omp.parallel a
 * num_threads(N) clause, which the code passes to the OpenMP runtime with
 * __kmpc_push_num_threads before each region; the clause overrides
 * omp_set_num_threads, and OpenMP has no call that lowers it from outside.
 * This definition is hidden, so the library's code binds it instead of
 * libiomp5's: it caps N by the limit the runtime points it at (the cores no
 * other thread of the machine is running on, resampled by the Python runtime
 * between calls) and hands the result to libiomp5's own function, found with
 * dlsym(RTLD_NEXT) among the library's dependencies. A limit of 0, or none
 * set, keeps N. Every team computes the same result at any size (the tiles
 * are the same; per-thread arena slots are indexed by thread number < N). */

typedef void (*push_num_threads_t)(void *, int32_t, int32_t);
static _Atomic(push_num_threads_t) push_num_threads;
static _Atomic(const _Atomic int32_t *) team_limit;

/* Points the library at the process's limit (an int32 the runtime owns and
 * keeps alive; NULL: none). */
EXPORT void lowerline_set_team_limit(const _Atomic int32_t *limit) {
  atomic_store(&team_limit, limit);
}

/* The team size for a region compiled for `threads`. */
EXPORT int32_t lowerline_team_size(int32_t threads) {
  const _Atomic int32_t *limit = atomic_load_explicit(&team_limit, memory_order_relaxed);
  int32_t cap = limit ? atomic_load_explicit(limit, memory_order_relaxed) : 0;
  return cap > 0 && cap < threads ? cap : threads;
}

HIDDEN void __kmpc_push_num_threads(void *loc, int32_t gtid, int32_t threads) {
  push_num_threads_t next = atomic_load_explicit(&push_num_threads, memory_order_relaxed);
  if (!next) { /* the same address for every thread: a race stores it twice */
    next = (push_num_threads_t)dlsym(RTLD_NEXT, "__kmpc_push_num_threads");
    if (!next)
      return; /* no OpenMP runtime: there is no region to size either */
    atomic_store_explicit(&push_num_threads, next, memory_order_relaxed);
  }
  next(loc, gtid, lowerline_team_size(threads));
}
#endif /* LOWERLINE_STANDALONE */

/* Failed run-time checks (lowerline-report-failed-asserts).
 *
 * A failed cf.assert calls lowerline_assert_failed with its message (a
 * constant string of the library) and then skips the work it guarded, on
 * whichever thread (OpenMP worker included) ran it. The first message wins;
 * lowerline_failed_check, called by the runtime after a call that left the slot
 * set, takes it and clears the slot for the next call. The
 * slot belongs to the library: calls running at the same time share it, so
 * their callers hold a lock on it for the call's duration. Only functions
 * without a failure word in their arena (lowerline.failure_record: a
 * module built with arena=False) report here; the others compare-and-swap
 * the message into their own call's arena and never call this. */
EXPORT _Atomic(const char *) lowerline_failed_slot; /* read by the runtime after a call */

HIDDEN void lowerline_assert_failed(const char *message) {
  const char *none = NULL;
  atomic_compare_exchange_strong(&lowerline_failed_slot, &none, message);
}

EXPORT const char *lowerline_failed_check(void) {
  return atomic_exchange(&lowerline_failed_slot, NULL);
}

/* f32 -> bf16, rounded to nearest even, NaNs kept (quieted).
 *
 * lowerline's pipeline computes bf16 arithmetic in f32 and rounds with integer
 * ops (lowerline-expand-bf16-truncf), but LLVM's x86 backend still legalizes
 * bf16 vector shuffles and element moves on a CPU without AVX512-BF16 by
 * promoting them to f32 and truncating back with a call to __truncsfbf2, which
 * libgcc has only from GCC 13 on (measured on this GCC 12 machine: a bf16
 * MLP's library did not load). Hidden: each library binds its own copy.
 *
 * GCC 12 has no __bf16 type to return; the ABIs put a __bf16 result in the
 * low 16 bits of the first FP register (x86-64: xmm0, AArch64: v0), where a
 * float with those bits in its low half is returned too. */
HIDDEN float __truncsfbf2(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  uint32_t half;
  if ((u & 0x7fffffffu) > 0x7f800000u)
    half = (u >> 16) | 0x40u; /* NaN: keep sign and payload, set the quiet bit */
  else
    half = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  float result;
  memcpy(&result, &half, sizeof result);
  return result;
}
