// lowerline's own dialect, loaded into every context lowerline makes
// (lowerline.pipeline.context.make_context, through lowerline.dialects.load).
// IRDL gives its ops and attributes no custom assembly: IR spells them in
// generic syntax, "lowerline.quantize"(%x) {params = #lowerline.per_tensor<...>}.
//
// The attributes passes exchange (lowerline.vector_sizes and the rest) are
// not declared here: they are builtin attributes on upstream ops, which
// IRDL does not verify; lowerline.pipeline.protocol declares and checks them.
irdl.dialect @lowerline {
  // Per-tensor affine quantization: real = scale * (stored - zero_point).
  //   #lowerline.per_tensor<5.000000e-01 : f32, 3 : i64>
  irdl.attribute @per_tensor {
    %scale = irdl.base "#builtin.float"
    %zero_point = irdl.base "#builtin.integer"
    irdl.parameters(scale: %scale, zero_point: %zero_point)
  }

  // Real values to the integers that store them: the Q of a QDQ pair as
  // PT2E quantized graphs import it, for the quantization work to extend
  // (per-channel parameters, folding into integer kernels).
  irdl.operation @quantize {
    %real = irdl.base "!builtin.tensor"
    %stored = irdl.base "!builtin.tensor"
    %params = irdl.base @lowerline::@per_tensor
    irdl.operands(input: %real)
    irdl.results(output: %stored)
    irdl.attributes {"params" = %params}
  }

  // Stored integers back to real values: the DQ of a QDQ pair.
  irdl.operation @dequantize {
    %stored = irdl.base "!builtin.tensor"
    %real = irdl.base "!builtin.tensor"
    %params = irdl.base @lowerline::@per_tensor
    irdl.operands(input: %stored)
    irdl.results(output: %real)
    irdl.attributes {"params" = %params}
  }
}
