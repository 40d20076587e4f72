// Process-wide allocator setting for gradient-sized buffers. glibc serves every allocation
// above 32 MB with a fresh mmap and hands it back to the OS on free, so each encode of a
// 25M-element tensor paid first-touch page faults on its whole output: 135 ms per 50 MB on the
// development machine (a microVM), 30x one memcpy of the input, whatever the codec did.
// Keeping large blocks in the heap lets the next step reuse them (1 ms for the same 50 MB).
// The price: the heap keeps its peak size until the process ends, as a caching allocator would.
// The `gradwire` executable links tcmalloc where it is installed (sim/CMakeLists.txt), which
// keeps freed blocks for reuse by itself and ignores these settings; they matter to the
// benchmarks and to a build without tcmalloc.
#pragma once

namespace gradwire {

/// Call once at process start, before any large allocation (gradwire's main, the benchmarks).
void reuse_large_buffers();

}  // namespace gradwire
