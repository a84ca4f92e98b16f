#pragma once
/**
 * @file
 * ASRDEC_API marks the declarations a shared libasrdec exports: the public API of the installed headers. The
 * library is compiled with hidden visibility, so everything else — `detail`, the executors, kernels and any
 * third-party template instantiations — stays inside it and cannot clash with an engine's own copies. In a static
 * build the mark changes nothing.
 */

#if defined(__GNUC__) || defined(__clang__)
#define ASRDEC_API __attribute__((visibility("default")))
#else
#define ASRDEC_API
#endif
