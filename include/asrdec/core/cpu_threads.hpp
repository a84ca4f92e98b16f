#pragma once
/**
 * @file
 * The CPU threads of the process. Every CPU decoder spreads a call's utterances over the calling thread and the
 * workers of one process-wide pool, shared by all decoders, so that a server with one decoder per request thread
 * does not start a pool per decoder: however many decoders exist, the process runs at most the pool's workers plus
 * the threads that call decoders. A decoder's `threads` setting caps how many threads one of its calls uses (the
 * caller's included; 0: the pool's size). Calls of different decoders share the workers as they become free; a call
 * never waits for a worker, since its own thread takes any row no worker took. Results never depend on any of this.
 *
 * The pool starts with the first CPU decoder and is sized once: set_cpu_threads() before that, or the environment
 * variable ASRDEC_CPU_THREADS, or by default every core the process may use (its CPU affinity).
 */

#include <cstdint>

#include "asrdec/core/export.hpp"

namespace asrdec {

/** Sizes the shared pool: `threads` in [1, 1024] counting one calling thread (so threads - 1 workers), or 0 for
 *  every core the process may use. Throws InvalidArgument for a value outside that range, or once the pool runs with
 *  another size (call it before the first CPU decoder is made). */
ASRDEC_API void set_cpu_threads(std::int32_t threads);

/** The size of the shared pool (starting it if it has not started): its workers plus one calling thread. */
ASRDEC_API std::int32_t cpu_threads();

}  // namespace asrdec
