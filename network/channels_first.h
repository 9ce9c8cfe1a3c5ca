// Channels-last islands of a network rewritten channels-first. ConvNeXt's blocks (and any
// network exported the same way) transpose an NCHW tensor to NHWC, normalize over the
// last axis, apply linear layers to it, and transpose back. The farm stores a 4-D
// tensor as its boundary layout says (channels innermost for channels_last), so the
// island's NHWC tensors were stored with H innermost and its linear layers read them
// with a stride. Rewritten in NCHW, the island is what the templates know: layer norm
// over axis 1, the linear layers 1x1 convolutions. It is what ONNX Runtime's transpose
// optimizer does to the same graph.
#pragma once

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// The network with every island rewritten: an island starts at a TRANSPOSE with perm
// [0, 2, 3, 1] of a 4-D tensor and takes its readers, transitively, up to TRANSPOSEs with
// perm [0, 3, 1, 2]. Each stage of it must be elementwise (a BINARY's other operand a
// parameter that varies along the channels only, or another stage of the island), a
// REDUCE over the last axis keeping it, or a MATMUL by a [C_in, C_out] parameter (with an
// optional [C_out] bias, alpha and beta 1); none may be an output of the network. Its
// stages then take NCHW shapes, its reductions axis 1, its matmuls become 1x1 CONVs
// (weights transposed to [C_out, C_in, 1, 1]; the values kept, raw data where they were
// random), its parameters along the channels [1, C, 1, 1]; the two transposes are
// dropped. The network computes the same values. Any other island is left as it is.
StatusOr<PipelineSpec> NetworkChannelsFirst(const PipelineSpec& network);

}  // namespace schedfarm
