// The kernel methods every backend overrides, declared once for CpuBackend and CudaBackend:
// each includes this file inside its class body, under `public:`. What each method does is
// written in backend.h, in the same order; where each backend defines it is in its folder's
// README (one file per op family). No include guard: it is a list, not a header of its own.
// Indented as the class bodies that include it:
// clang-format off

  void fill(const TensorRef& out, double value) override;
  void arange(const TensorRef& out, double start, double step) override;
  void copy(const TensorRef& dst, const TensorRef& src) override;
  void random(const TensorRef& out, RandomKind kind, std::uint64_t seed, std::uint64_t offset,
              double alpha, double beta) override;
  void random_with_counters(const TensorRef& out, RandomKind kind, const TensorRef& counters,
                            std::uint64_t offset, double alpha, double beta) override;

  void unary(UnaryOp op, const TensorRef& out, const TensorRef& in, double alpha,
             double beta) override;
  void binary(BinaryOp op, const TensorRef& out, const TensorRef& a, const TensorRef& b,
              double alpha) override;
  void where(const TensorRef& out, const TensorRef& cond, const TensorRef& a,
             const TensorRef& b) override;

  void reduce(ReduceOp op, const TensorRef& out, const TensorRef& in, std::uint64_t reduced,
              double scale) override;

  void matmul(const TensorRef& out, const TensorRef& a, const TensorRef& b,
              bool accumulate) override;

  void softmax(const TensorRef& out, const TensorRef& in, int dim, bool log) override;
  void softmax_backward(const TensorRef& dx, const TensorRef& dy, const TensorRef& y, int dim,
                        bool log) override;

  void norm_forward(const NormParams& params, const TensorRef& y, const TensorRef& mean,
                    const TensorRef& rstd, const TensorRef& x, const TensorRef* gain,
                    const TensorRef* bias) override;
  void norm_backward(const NormParams& params, const TensorRef& dx, const TensorRef* dgain,
                     const TensorRef* dbias, const TensorRef& dy, const TensorRef& x,
                     const TensorRef& mean, const TensorRef& rstd, const TensorRef* gain) override;

  void batch_norm_statistics(const TensorRef& mean, const TensorRef& variance,
                             const TensorRef& rstd, const TensorRef& x, double eps) override;
  void batch_norm_forward(const TensorRef& y, const TensorRef& x, const TensorRef& mean,
                          const TensorRef& rstd, const TensorRef* gain,
                          const TensorRef* bias) override;
  void batch_norm_backward(const TensorRef& dx, const TensorRef* dgain, const TensorRef* dbias,
                           const TensorRef& dy, const TensorRef& x, const TensorRef& mean,
                           const TensorRef& rstd, const TensorRef* gain,
                           bool batch_statistics) override;

  void cross_entropy_forward(const CrossEntropyParams& params, const TensorRef& loss,
                             const TensorRef& log_normaliser, const TensorRef& logits,
                             const TensorRef& targets) override;
  void cross_entropy_backward(const CrossEntropyParams& params, const TensorRef& dlogits,
                              const TensorRef& dloss, const TensorRef& logits,
                              const TensorRef& targets, const TensorRef& log_normaliser) override;

  void adam_update(const AdamParams& params, const TensorRef& weight, const TensorRef& grad,
                   const TensorRef& exp_avg, const TensorRef& exp_avg_sq) override;

  void gru_cell_forward(const TensorRef& h, const TensorRef& activations, const TensorRef& gx,
                        const TensorRef& gh, const TensorRef& h_prev,
                        const TensorRef* mask) override;
  void gru_cell_backward(const TensorRef& dgx, const TensorRef& dgh, const TensorRef& dh_prev,
                         const TensorRef& dh, const TensorRef& activations, const TensorRef& gh,
                         const TensorRef& h_prev, const TensorRef* mask) override;
  void normed_gru_cell_forward(const GruStateNorms& norms, const TensorRef& h,
                               const TensorRef& activations, const TensorRef& normalised,
                               const TensorRef& statistics, const TensorRef& gx,
                               const TensorRef& gh, const TensorRef& h_prev,
                               const TensorRef* mask) override;
  void normed_gru_cell_backward(const GruStateNorms& norms, const TensorRef& dgx,
                                const TensorRef& dgh, const TensorRef& dh_prev,
                                const GruStateNormGrads& affine, const TensorRef& dh,
                                const TensorRef& activations, const TensorRef& normalised,
                                const TensorRef& statistics, const TensorRef& gh,
                                const TensorRef& h_prev, const TensorRef* mask) override;
  void lstm_cell_forward(const TensorRef& c, const TensorRef& activations, const TensorRef& gates,
                         const TensorRef& c_prev, const TensorRef* mask) override;
  void lstm_cell_backward(const TensorRef& dgates, const TensorRef& dc_prev, const TensorRef& dc,
                          const TensorRef& activations, const TensorRef& c_prev,
                          const TensorRef* mask) override;
  void lstm_step_forward(const LstmStepNorms& norms, const TensorRef& state,
                         const TensorRef& activations, const TensorRef& cell,
                         const TensorRef& statistics, const TensorRef& gx, const TensorRef& gh,
                         const TensorRef& h_prev, const TensorRef& c_prev,
                         const TensorRef* mask) override;
  void lstm_step_backward(const LstmStepNorms& norms, const TensorRef& dgx, const TensorRef& dgh,
                          const TensorRef& dh_prev, const TensorRef& dc_prev,
                          const LstmStepNormGrads& affine, const TensorRef& dstate,
                          const TensorRef& state, const TensorRef& activations,
                          const TensorRef& cell, const TensorRef& statistics, const TensorRef& gh,
                          const TensorRef& c_prev, const TensorRef* mask) override;

  void im2col(const TensorRef& columns, const TensorRef& image, const Window2d& window) override;
  void col2im(const TensorRef& image, const TensorRef& columns, const Window2d& window) override;
  void conv2d(const TensorRef& y, const TensorRef& x, const TensorRef& weight,
              const TensorRef* bias, const Window2d& window) override;
  void conv2d_weight_gradient(const TensorRef& dw, const TensorRef& x, const TensorRef& dy,
                              const Window2d& window) override;
  void max_pool2d(const TensorRef& out, const TensorRef& indices, const TensorRef& in,
                  const Window2d& window) override;
  void max_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                           const TensorRef& indices) override;
  void avg_pool2d(const TensorRef& out, const TensorRef& in, const Window2d& window) override;
  void avg_pool2d_backward(const TensorRef& dx, const TensorRef& dy,
                           const Window2d& window) override;

  void index_select(const TensorRef& out, const TensorRef& in, int dim,
                    const TensorRef& index) override;
  void index_add(const TensorRef& out, int dim, const TensorRef& index,
                 const TensorRef& src) override;
  void gather(const TensorRef& out, const TensorRef& in, int dim, const TensorRef& index) override;
  void scatter_add(const TensorRef& out, int dim, const TensorRef& index,
                   const TensorRef& src) override;

// clang-format on
