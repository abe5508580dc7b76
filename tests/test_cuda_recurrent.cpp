// CPU-versus-CUDA parity of the recurrent layers, values and gradients: the fused GRU step and
// LSTM cell-state kernels with and without a mask, the GRU step with its state norms fused in
// and the whole LSTM step with its norms for every row norm at several widths, and GRU and LSTM
// layers over several steps for every norm slot choice (none, LayerNorm, RMSNorm, pRMSNorm, L2Norm,
// WeightNorm), both directions, a padding mask and lengths, with input, initial-state and parameter
// gradients; and the layers' loops run as one op (gru_sequence, lstm_sequence), packed, with
// state dropout.
//
// Tolerances: the step kernels are pointwise (testing::elementwise). A layer chains T steps of
// matrix products (sums of input or hidden size terms) and norms (testing::norm_values), and
// its parameter gradients sum over T B rows; errors of each step carry into the next, so the
// layers use norm_gradients (2e-4 in float32) scaled by the number of steps.

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda_parity.h"
#include "module_gradcheck.h"
#include "state_norm_variants.h"

using namespace normgrad;
using testing::elementwise;
using testing::Inputs;
using testing::normal;
using testing::parity_mismatch;
using testing::Tolerance;

namespace {

const std::vector<std::string> cell_norms = {"none",         "layernorm", "rmsnorm",
                                             "prmsnorm:0.5", "l2norm",    "weightnorm"};

std::shared_ptr<nn::Recurrent> make_layer(bool lstm, const std::string& norm, bool bidirectional,
                                          DType dtype, bool batch_first = false) {
  Generator generator(11);
  const nn::RecurrentOptions options{.cell = {.norm = norm, .dtype = dtype},
                                     .bidirectional = bidirectional,
                                     .batch_first = batch_first};
  std::shared_ptr<nn::Recurrent> layer;
  if (lstm)
    layer = std::make_shared<nn::Lstm>(6, 8, options, generator);
  else
    layer = std::make_shared<nn::Gru>(6, 8, options, generator);
  testing::randomise(*layer, 12);
  return layer;
}

// A step's mask [rows] in which rows 1, 4, 7, ... keep their state.
Tensor every_third_row_kept(std::int64_t rows, DType dtype) {
  std::vector<double> takes(static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < takes.size(); ++i) takes[i] = i % 3 == 1 ? 0.0 : 1.0;
  return from_vector(takes, {rows}).to(dtype);
}

// The gradients of a fused step's norm gains and biases over `rows` rows: the norms' own
// tolerance (sums over a row enter every value), or that of a sum of O(1) products over the
// rows where that is larger.
Tolerance affine_tolerance(DType dtype, std::int64_t rows) {
  const Tolerance gradients = testing::norm_gradients(dtype);
  return {gradients.rtol,
          std::max(gradients.atol, testing::summed(dtype, static_cast<double>(rows), 4.0).atol)};
}

// A layer's tolerance after `steps` steps: each step's rounding enters the next.
Tolerance layer_tolerance(DType dtype, double steps) {
  const Tolerance per_step = testing::norm_gradients(dtype);
  return {per_step.rtol * steps, per_step.atol * steps};
}

}  // namespace

TEST_CASE("cuda parity: fused gru_step and lstm_cell_state, with and without a mask") {
  SKIP_PARITY_WITHOUT_CUDA();
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const bool masked : {false, true}) {
      INFO(dtype << ", masked " << masked);
      const Tensor mask = masked ? tensor({1, 0, 1, 1, 0}, {.dtype = dtype}) : Tensor();
      const auto mask_on = [mask](const Tensor& like) {
        return mask.defined() ? testing::on_device_of(mask, like) : Tensor();
      };
      CHECK_NO_MISMATCH(parity_mismatch(
          [&](const Inputs& in) {
            return gru_step(in[0], in[1], in[2], mask_on(in[0]));
          },
          {normal({5, 21}, 1, dtype, 2.0), normal({5, 21}, 2, dtype, 2.0),
           normal({5, 7}, 3, dtype)},
          elementwise(dtype)));
      CHECK_NO_MISMATCH(parity_mismatch(
          [&](const Inputs& in) {
            return lstm_cell_state(in[0], in[1], mask_on(in[0]));
          },
          {normal({5, 28}, 4, dtype, 2.0), normal({5, 7}, 5, dtype)}, elementwise(dtype)));
      // Strided operands (transposed views) are read correctly too.
      CHECK_NO_MISMATCH(parity_mismatch(
          [&](const Inputs& in) {
            return gru_step(in[0].t(), in[1], in[2].t(), mask_on(in[0]));
          },
          {normal({21, 5}, 6, dtype, 2.0), normal({5, 21}, 7, dtype, 2.0),
           normal({7, 5}, 8, dtype)},
          elementwise(dtype)));
    }
  }
}

TEST_CASE("cuda parity: normed_gru_step for every row norm, at widths below and above a block") {
  SKIP_PARITY_WITHOUT_CUDA();
  // (rows, H): fewer units than a warp; several units per thread (256 threads a row); many
  // rows with a gates block of 2048.
  const std::vector<std::pair<std::int64_t, std::int64_t>> sizes = {{5, 7}, {3, 700}, {70, 1024}};
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const testing::Variant& variant : testing::variants) {
      for (const auto& size : sizes) {
        const auto& rows = size.first;
        const auto& hidden = size.second;
        for (const bool masked : {false, true}) {
          INFO(variant.name << ", " << dtype << ", " << rows << " rows of " << hidden
                            << " units, masked " << masked);
          const Tensor mask = masked ? every_third_row_kept(rows, dtype) : Tensor();
          const GruStateNorms norms = testing::state_norms(variant, hidden, dtype);
          Inputs inputs = {normal({rows, 3 * hidden}, 1, dtype),
                           normal({rows, 3 * hidden}, 2, dtype, 3.0),
                           normal({rows, hidden}, 3, dtype)};
          for (const Tensor& t : testing::affine_of(norms)) inputs.push_back(t.detach());
          const Tolerance gradients = testing::norm_gradients(dtype);
          const Tolerance affine = affine_tolerance(dtype, rows);
          CHECK_NO_MISMATCH(parity_mismatch(
              [&](const Inputs& in) {
                const Tensor m = mask.defined() ? testing::on_device_of(mask, in[0]) : Tensor();
                return normed_gru_step(in[0], in[1], in[2],
                                                       testing::with_affine(norms, in, 3), m);
              },
              inputs, testing::norm_values(dtype), {gradients, gradients, gradients, affine}));
        }
      }
    }
  }
}

TEST_CASE("cuda parity: lstm_step for every row norm and none, at widths below and above a block") {
  SKIP_PARITY_WITHOUT_CUDA();
  const std::vector<std::pair<std::int64_t, std::int64_t>> sizes = {{5, 7}, {3, 700}, {70, 512}};
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    std::vector<std::pair<std::string, LstmStepNorms>> cases;
    for (const auto& size : sizes) {
      const auto& rows = size.first;
      const auto& hidden = size.second;
      for (const testing::Variant& variant : testing::variants)
        cases.emplace_back(variant.name, testing::lstm_norms(variant, hidden, dtype));
      cases.emplace_back("no norm", LstmStepNorms{});
      for (const auto& norm_case : cases) {
        const auto& name = norm_case.first;
        const auto& norms = norm_case.second;
        for (const bool masked : {false, true}) {
          INFO(name << ", " << dtype << ", " << rows << " rows of " << hidden << " units, masked "
                    << masked);
          const Tensor mask = masked ? every_third_row_kept(rows, dtype) : Tensor();
          Inputs inputs = {normal({rows, 4 * hidden}, 1, dtype),
                           normal({rows, 4 * hidden}, 2, dtype, 3.0),
                           normal({rows, hidden}, 3, dtype), normal({rows, hidden}, 4, dtype)};
          for (const Tensor& t : testing::affine_of(norms)) inputs.push_back(t.detach());
          const Tolerance gradients = testing::norm_gradients(dtype);
          const Tolerance affine = affine_tolerance(dtype, rows);
          CHECK_NO_MISMATCH(parity_mismatch(
              [&](const Inputs& in) {
                const Tensor m = mask.defined() ? testing::on_device_of(mask, in[0]) : Tensor();
                const std::array<Tensor, 2> state = lstm_step(
                    in[0], in[1], in[2], in[3], testing::with_affine(norms, in, 4), m);
                return cat({state[0].flatten(), state[1].flatten()});
              },
              inputs, testing::norm_values(dtype),
              {gradients, gradients, gradients, gradients, affine}));
        }
      }
      cases.clear();
    }
  }
}

TEST_CASE("cuda parity: GRU and LSTM layers for every norm, with a mask, both directions") {
  SKIP_PARITY_WITHOUT_CUDA();
  // [T = 5, B = 3]: row 1 stops after 3 steps, row 2 after 1.
  const Tensor mask = tensor({{1, 1, 1}, {1, 1, 0}, {1, 1, 0}, {1, 0, 0}, {1, 0, 0}});
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const std::string& norm : cell_norms) {
      for (const bool lstm : {false, true}) {
        INFO((lstm ? "LSTM" : "GRU") << ", norm " << norm << ", " << dtype);
        const std::shared_ptr<nn::Recurrent> layer = make_layer(lstm, norm, true, dtype);
        nn::Recurrent& recurrent = *layer;
        // Outputs, final hidden states (and cells) together, from an initial state; gradients
        // of the input, the initial state and every parameter.
        CHECK_NO_MISMATCH(testing::module_parity_mismatch(
            recurrent,
            [&](const Inputs& in) {
              const nn::RecurrentOutput out =
                  recurrent.forward(in[0], testing::on_device_of(mask.to(dtype), in[0]), in[1]);
              std::vector<Tensor> parts{out.output.flatten(), out.hidden.flatten()};
              if (lstm) parts.push_back(out.cell.flatten());
              return cat(parts);
            },
            {normal({5, 3, 6}, 13, dtype), normal({2, 3, 8}, 14, dtype, 0.5)},
            layer_tolerance(dtype, 5), layer_tolerance(dtype, 5)));
      }
    }
  }
}

TEST_CASE("cuda parity: GRU and LSTM layers with lengths, batch first") {
  SKIP_PARITY_WITHOUT_CUDA();
  const Tensor lengths = tensor({7, 2, 5, 4}, {.dtype = DType::Int64});
  for (const bool lstm : {false, true}) {
    INFO((lstm ? "LSTM" : "GRU"));
    const std::shared_ptr<nn::Recurrent> layer =
        make_layer(lstm, "rmsnorm", true, DType::Float32, /*batch_first=*/true);
    nn::Recurrent& recurrent = *layer;
    CHECK_NO_MISMATCH(testing::module_parity_mismatch(
        recurrent,
        [&](const Inputs& in) {
          const nn::RecurrentOutput out = recurrent.forward_lengths(in[0], in[1]);
          return cat({out.output.flatten(), out.hidden.flatten()});
        },
        {normal({4, 7, 6}, 15), lengths}, layer_tolerance(DType::Float32, 7),
        layer_tolerance(DType::Float32, 7)));
  }
}

TEST_CASE(
    "cuda parity: GRU and LSTM loops as one op, packed, with state dropout, both directions") {
  SKIP_PARITY_WITHOUT_CUDA();
  // Unsorted lengths, one of them 0: every step runs a prefix of the sorted rows.
  const Tensor lengths = tensor({5, 2, 0, 4}, {.dtype = DType::Int64});
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const std::string norm : {"none", "layernorm", "rmsnorm"}) {
      for (const bool lstm : {false, true}) {
        INFO((lstm ? "LSTM" : "GRU") << ", norm " << norm << ", " << dtype);
        const std::shared_ptr<nn::Recurrent> layer = make_layer(lstm, norm, true, dtype);
        nn::Recurrent& recurrent = *layer;
        Generator generator(16);
        const Tensor dropout =
            nn::functional::dropout_mask({2, 4, 8}, 0.3, generator, {.dtype = dtype});
        Inputs inputs{normal({5, 4, 6}, 17, dtype), lengths, normal({2, 4, 8}, 18, dtype, 0.5)};
        if (lstm) inputs.push_back(normal({2, 4, 8}, 19, dtype, 0.5));
        CHECK_NO_MISMATCH(testing::module_parity_mismatch(
            recurrent,
            [&](const Inputs& in) {
              const nn::RecurrentOutput out =
                  recurrent.forward_lengths(in[0], in[1], in[2], lstm ? in[3] : Tensor(),
                                            testing::on_device_of(dropout, in[0]));
              std::vector<Tensor> parts{out.output.flatten(), out.hidden.flatten()};
              if (lstm) parts.push_back(out.cell.flatten());
              return cat(parts);
            },
            inputs, layer_tolerance(dtype, 5), layer_tolerance(dtype, 5)));
      }
    }
  }
}
