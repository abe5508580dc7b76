#pragma once
// The losses of order embeddings (Vendrov et al. 2016), the model of the RMSNorm paper's
// image-caption retrieval experiment (its Tables 7 and 8).
//
// Order violation. Captions sit above images in a partial order: caption s is a description
// of image v when s <= v in every coordinate (embeddings are non-negative, taken in absolute
// value). The penalty for pair (s, v) is how far that fails:
//   E(s, v) = || max(0, s - v) ||^2
// order_violations(s [N, D], v [M, D]) is the matrix E [N, M], E[n][m] = E(s_n, v_m): 0 where
// the order holds, and lower the better s_n describes v_m.
//
// Contrastive hinge loss over a batch of N pairs (s_n, v_n), whose errors E [N, N] hold the
// right pairs on the diagonal: every wrong caption of an image and every wrong image of a
// caption must have an error at least `margin` above the right pair's,
//   loss = sum_{n != m} max(0, margin - E[n][m] + E[m][m])     (wrong captions n of image m)
//        + sum_{n != m} max(0, margin - E[n][m] + E[n][n])     (wrong images m of caption n)
// summed, not averaged, as the original code does. Any error matrix with that layout works: a
// symmetric model passes minus its cosine similarities.
//
//   Tensor loss = nn::contrastive_hinge_loss(nn::order_violations(captions, images), 0.05);

#include "core/tensor.h"

namespace normgrad::nn {

Tensor order_violations(const Tensor& captions, const Tensor& images);
Tensor contrastive_hinge_loss(const Tensor& errors, double margin);

}  // namespace normgrad::nn
