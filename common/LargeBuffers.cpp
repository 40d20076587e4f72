#include "common/LargeBuffers.h"

#include <cstdlib>  // defines __GLIBC__ on glibc systems (it is not predefined by the compiler)

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gradwire {

void reuse_large_buffers() {
#if defined(__GLIBC__)
  // 1 GiB: above any single gradient buffer we expect; both settings are per process.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace gradwire
