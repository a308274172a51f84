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

  // torch-mlir's TMTensor ops, as the import worker hands them over: their
  // properties as attributes, their one-block region outlined into a private
  // function named by `combiner` (a block ending in tm_tensor.yield cannot be
  // a region here: IRDL declares no terminators). Lowered to scf loops over
  // tensors by lowerline-lower-tm-tensor; the semantics are TMTensor's
  // (torch-mlir lib/Dialect/TMTensor/IR/TMTensorOps.cpp).

  // An inclusive or exclusive scan along `dimension`:
  //   output[i] = combiner(output[i-1], input[i])  (inclusive)
  // `final` holds the last value along `dimension`.
  irdl.operation @tm_scan {
    %input = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %accumulator = irdl.base "!builtin.tensor"
    %dimension = irdl.base "#builtin.integer"
    %inclusive = irdl.base "#builtin.integer"
    %combiner = irdl.base "#builtin.symbol_ref"
    irdl.operands(input: %input, init: %output, accumulator: %accumulator)
    irdl.results(output: %output, final: %accumulator)
    irdl.attributes {"dimension" = %dimension, "inclusive" = %inclusive, "combiner" = %combiner}
  }

  // original[index(n, u...)] = combiner(updates[n, u...], original[index(n, u...)])
  // for every update, in order; the index takes indices[n, j] in dimension
  // dimension_map[j] and the update's trailing coordinates in the last ones.
  irdl.operation @tm_scatter {
    %updates = irdl.base "!builtin.tensor"
    %indices = irdl.base "!builtin.tensor"
    %original = irdl.base "!builtin.tensor"
    %dimension_map = irdl.base "#builtin.dense_array"
    %unique = irdl.base "#builtin.integer"
    %combiner = irdl.base "#builtin.symbol_ref"
    irdl.operands(updates: %updates, indices: %indices, original: %original)
    irdl.results(result: %original)
    irdl.attributes {"dimension_map" = %dimension_map, "unique_indices" = %unique, "combiner" = %combiner}
  }

  // Sorts `keys` along `dimension` (and `values` with them) by the
  // comparator `combiner(a, b, a_value, b_value) -> i1`: true when a goes
  // before b.
  irdl.operation @tm_sort {
    %keys = irdl.base "!builtin.tensor"
    %values = irdl.base "!builtin.tensor"
    %dimension = irdl.base "#builtin.integer"
    %combiner = irdl.base "#builtin.symbol_ref"
    irdl.operands(keys: %keys, values: optional %values)
    irdl.results(sorted_keys: %keys, sorted_values: optional %values)
    irdl.attributes {"dimension" = %dimension, "combiner" = %combiner}
  }
}
