#pragma once
// NORMGRAD_ROW_KERNEL marks a function whose loops are compiled twice, for AVX2 and for
// baseline x86-64 (SSE2), the loader picking one for the machine. With SSE2 alone the norm
// loops are limited by instructions, not memory (on data in cache the AVX2 clone is about
// twice as fast). flatten inlines the templated loops a marked function calls into each
// clone, so both get the clone's instruction set.

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define NORMGRAD_ROW_KERNEL __attribute__((target_clones("avx2", "default"), flatten))
#else
#define NORMGRAD_ROW_KERNEL
#endif
