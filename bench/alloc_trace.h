/*
 * bench/alloc_trace.h - the record format shared by bench/alloc_trace.c (writer) and
 * bench/trace_replay.c (reader). One record per call, 40 bytes, host byte order; a record with
 * t == 0 ends the log.
 */
#ifndef BENCH_ALLOC_TRACE_H
#define BENCH_ALLOC_TRACE_H

#include <stdint.h>

enum trace_op {
  TRACE_MALLOC = 1,   /* a = size, b = address */
  TRACE_FREE = 2,     /* a = address */
  TRACE_REALLOC = 3,  /* a = new size, b = new address, c = old address */
  TRACE_MEMALIGN = 4, /* a = size, b = address, c = alignment */
  TRACE_CALLOC = 5,   /* a = size, b = address */
};

#define TRACE_NO_ARENA 0xffff

struct trace_rec {
  uint64_t t;      /* CLOCK_REALTIME, ns */
  uint32_t tid;    /* kernel thread id */
  uint16_t op;     /* enum trace_op */
  uint16_t arena;  /* the thread's arena, TRACE_NO_ARENA when unknown */
  uint64_t a, b, c;
};

_Static_assert(sizeof(struct trace_rec) == 40, "trace records are 40 bytes");

#endif
