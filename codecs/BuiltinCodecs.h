// Registration of the built-in codec families. Each family registers its codecs in its own
// translation unit, so adding a method touches that family's file and nothing shared.
#pragma once

namespace gradwire {

class CodecRegistry;

/// dgc, gradient_dropping, sdagc, adacomp, randomk (codecs/sparsify/SparsifierRegistration.cpp).
void register_sparsifiers(CodecRegistry& registry);

/// qsgd, terngrad, onebit, signsgd, signum, efsignsgd, natural, natural_dithering,
/// topk_natural / compose, fp16, bf16 (codecs/quantize/QuantizerRegistration.cpp).
void register_quantizers(CodecRegistry& registry);

/// powersgd, gradiveq: codecs that exploit correlation (codecs/lowrank/LowRankRegistration.cpp).
void register_correlation_codecs(CodecRegistry& registry);

/// lgc_ps, lgc_ring: Learned Gradient Compression (codecs/learned/LearnedRegistration.cpp).
void register_learned_codecs(CodecRegistry& registry);

}  // namespace gradwire
