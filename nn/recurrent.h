#pragma once
// What GRU and LSTM layers share: options, the cell interface, and the layer that runs a cell
// over time, in one or both directions, skipping the padded steps of shorter sequences.
//
//   nn::Gru encoder(512, 1024, {.cell = {.norm = "rmsnorm"}, .bidirectional = true});
//   nn::RecurrentOutput out = encoder.forward(embedded, mask);   // embedded [T, B, 512]
//   out.output;  // [T, B, 2048]: both directions' states at each step, 0 at padded steps
//   out.hidden;  // [2, B, 1024]: each direction's last state
//
// How a step is computed (paper, App. A.1 and A.2): the input side of every step, W_ih x + b_ih
// and its norms, is one GEMM over all T B rows before the loop; the loop does only the
// state side, W_hh h + b_hh and its norms, and the fused pointwise kernel of
// autograd/functions/recurrent.h.
//
// Variable lengths: a mask ([T, B], or [B, T] when batch_first; nonzero = a real step) or a
// lengths vector. A row's state does not change at its padded steps, so the reverse direction
// starts at each sequence's own last step and `hidden` holds each sequence's final state.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/generator.h"
#include "nn/module.h"
#include "nn/norms/batch_norm.h"
#include "nn/norms/factory.h"
#include "nn/norms/weight_norm.h"
#include "autograd/functions/recurrent_sequence.h"

namespace normgrad::nn {

struct RecurrentCellOptions {
  // The normaliser of every norm slot of the cell (norms/factory.h), given as a spec string:
  // none, layernorm, rmsnorm, prmsnorm[:p], l2norm, weightnorm (which reparameterises W_ih
  // and W_hh instead), or batchnorm. BatchNorm in a cell is recurrent batch normalisation
  // (Cooijmans et al. 2017) as the attentive reader's code runs it: each step's state side and
  // cell are normalised over the rows that step computes, the input side over all steps' rows
  // at once, always with those statistics (no running estimates: evaluation uses its own
  // batch's, as that code validates), and the gains start at 0.1, as that paper advises.
  NormSpec norm{};
  bool bias = true;            // b_ih, added to the input side before its norm
  bool recurrent_bias = true;  // b_hh, added to the state side before its norm (as PyTorch)
  bool fused = true;           // false: the composed pointwise twin, for tests
  // The parameters' dtype. A float32 layer also runs bfloat16 input: mixed precision, its
  // weights and gains rounded for each step (autograd/mixed_precision.h), its gradients float32.
  DType dtype = DType::Float32;
};

struct RecurrentOptions {
  RecurrentCellOptions cell = {};
  bool bidirectional = false;
  bool batch_first = false;  // input, mask and output [B, T, ...] instead of [T, B, ...]
};

// A cell with `gates` blocks of `hidden` units: W_ih [gates H, input], W_hh [gates H, H] and
// their biases, initialised as PyTorch does, uniform on [-1/sqrt(H), 1/sqrt(H)].
class RecurrentCell : public Module {
 public:
  RecurrentCell(std::int64_t input_size, std::int64_t hidden_size, std::int64_t gates,
                const RecurrentCellOptions& options, Generator& generator);

  std::int64_t input_size() const { return input_size_; }
  std::int64_t hidden_size() const { return hidden_size_; }
  const NormSpec& norm_spec() const { return spec_; }
  const RecurrentCellOptions& options() const { return options_; }

  Tensor weight_ih() const;  // W_ih, through WeightNorm when the spec says so
  Tensor weight_hh() const;
  // Replaces W_ih [gates H, input] and W_hh [gates H, H] with the given values (copied), for a
  // model's own initialisation; under WeightNorm its direction and gain start from them.
  void set_weights(const Tensor& weight_ih, const Tensor& weight_hh);
  Tensor bias_ih;  // [gates H]; undefined without options.bias
  Tensor bias_hh;  // [gates H]; undefined without options.recurrent_bias

  // The input side of any number of steps at once: x [..., input] -> [..., gates H].
  virtual Tensor input_side(const Tensor& x) = 0;
  // One step, given its input side [B, gates H] and the state ({h}, or {h, c} for an LSTM),
  // each [B, H]. mask: undefined or [B]; rows where it is 0 keep their state.
  // state_dropout: undefined or [B, H], multiplying h where W_hh reads it (and only there: the
  // state carried on is not masked), the same mask at every step for variational dropout
  // (functional::dropout_mask in dropout.h).
  virtual std::vector<Tensor> step(const Tensor& input_side, const std::vector<Tensor>& state,
                                   const Tensor& mask, const Tensor& state_dropout = Tensor()) = 0;
  virtual std::size_t state_count() const = 0;
  // A whole direction's loop at once, where the cell runs it as one op (a fused GRU:
  // normgrad::gru_sequence): from every step's input side [T, B, gates H] and the initial
  // state (as in step()), with a mask or packed batch sizes, state dropout as in step() and
  // the direction in `options`, each state after every step ({h}, or {h, c}), [T, B, H] in time
  // order; a row holds its state where it skips a step. nullopt where the cell steps.
  virtual std::optional<std::vector<Tensor>> run_sequence(
      const Tensor& input_side, const std::vector<Tensor>& initial,
      const normgrad::SequenceOptions& options);

 protected:
  Tensor project_input(const Tensor& x) const;  // W_ih x + b_ih
  Tensor project_state(const Tensor& h) const;  // W_hh h + b_hh
  // W_hh (h * state_dropout) + b_hh, after checking the mask's shape; W_hh h + b_hh when the
  // mask is undefined.
  Tensor project_state(const Tensor& h, const Tensor& state_dropout) const;
  // A norm for this cell's spec over `features` values, registered as `name`.
  std::shared_ptr<Norm> add_norm(const std::string& name, std::int64_t features);

 private:
  std::int64_t input_size_, hidden_size_;
  RecurrentCellOptions options_;
  NormSpec spec_;
  Tensor weight_ih_, weight_hh_;  // plain weights, when not reparameterised
  std::shared_ptr<WeightNorm> weight_ih_norm_, weight_hh_norm_;
};

// The BatchNorm of a recurrent cell's norm slots (RecurrentCellOptions says what it does): a
// BatchNorm1d without running estimates over the rows of its input [..., F], gains from 0.1.
// A single row normalises to 0 (it is its own mean), so its output is the bias.
class RecurrentBatchNorm : public Norm {
 public:
  RecurrentBatchNorm(std::int64_t features, const NormSpec& spec, DType dtype);
  std::string type_name() const override { return "RecurrentBatchNorm"; }
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<BatchNorm1d> norm_;
};

struct RecurrentOutput {
  Tensor output;  // [T, B, D H] ([B, T, D H] when batch_first); 0 at padded steps
  Tensor hidden;  // [D, B, H]: each direction's final state
  Tensor cell;    // [D, B, H]: an LSTM's final cell state; undefined for a GRU
};

// A mask [B, T] (or [T, B] unless batch_first) of 1 for the first lengths[b] steps of row b and
// 0 after them. lengths: int64 [B], each in [0, max_length].
Tensor sequence_mask(const Tensor& lengths, std::int64_t max_length, bool batch_first = true,
                     DType dtype = DType::Float32);

// A cell run over time: the base of Gru and Lstm.
class Recurrent : public Module {
 public:
  using CellFactory = std::function<std::shared_ptr<RecurrentCell>()>;
  Recurrent(const CellFactory& make_cell, const RecurrentOptions& options);

  // input: [T, B, input] ([B, T, input] when batch_first). mask: undefined, or [T, B]
  // ([B, T]). initial_hidden, initial_cell: undefined (zeros) or [D, B, H]; initial_cell is
  // for an LSTM only. state_dropout: undefined or [D, B, H], each direction's mask on the state
  // its W_hh reads at every step (RecurrentCell::step).
  RecurrentOutput forward(const Tensor& input, const Tensor& mask = Tensor(),
                          const Tensor& initial_hidden = Tensor(),
                          const Tensor& initial_cell = Tensor(),
                          const Tensor& state_dropout = Tensor());
  // The same with lengths (int64 [B]) in place of the mask, run packed: each step computes
  // only the rows whose sequences are still going (any order of lengths; the rows are sorted
  // inside and the results returned in the caller's order), so padding costs no work.
  RecurrentOutput forward_lengths(const Tensor& input, const Tensor& lengths,
                                  const Tensor& initial_hidden = Tensor(),
                                  const Tensor& initial_cell = Tensor(),
                                  const Tensor& state_dropout = Tensor());

  std::int64_t directions() const { return options_.bidirectional ? 2 : 1; }
  RecurrentCell& cell(std::int64_t direction = 0) const;  // 0 forward, 1 reverse
  const RecurrentOptions& options() const { return options_; }

 private:
  // An Error naming the first argument of forward that does not fit this layer.
  void check_arguments(const Tensor& input, const Tensor& mask, const Tensor& initial_hidden,
                       const Tensor& initial_cell, const Tensor& state_dropout) const;

  RecurrentOptions options_;
  std::vector<std::shared_ptr<RecurrentCell>> cells_;
};

}  // namespace normgrad::nn
