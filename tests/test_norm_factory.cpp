// The norm factory (nn/norms/factory.h) and the invariance lab built on it
// (examples/norm_invariance), whose measured table must equal the paper's Table 1.

#include <algorithm>

#include "helpers.h"
#include "norm_invariance/invariance.h"
#include "norm_invariance/report.h"

using namespace normgrad;
using testing::all_close;

TEST_CASE("NormSpec parses every kind and its options, and prints them back") {
  CHECK(nn::NormSpec::parse("none").kind == nn::NormKind::None);
  CHECK(nn::NormSpec::parse("layernorm").kind == nn::NormKind::LayerNorm);
  CHECK(nn::NormSpec::parse("rmsnorm").kind == nn::NormKind::RMSNorm);
  CHECK(nn::NormSpec::parse("l2norm").kind == nn::NormKind::L2Norm);
  CHECK(nn::NormSpec::parse("batchnorm").kind == nn::NormKind::BatchNorm);
  CHECK(nn::NormSpec::parse("weightnorm").reparameterises_weight());
  CHECK_FALSE(nn::NormSpec::parse("weightnorm").normalises_outputs());

  const nn::NormSpec partial = nn::NormSpec::parse("prmsnorm");
  CHECK(partial.kind == nn::NormKind::PartialRMSNorm);
  CHECK(partial.partial == 0.0625);
  CHECK_FALSE(partial.eps.has_value());

  const nn::NormSpec full =
      nn::NormSpec::parse(" prmsnorm:0.125 , eps=1e-8,placement=outside,rounding=floor,bias=on");
  CHECK(full.partial == 0.125);
  CHECK(full.eps == 1e-8);
  CHECK(full.placement == EpsPlacement::OutsideSqrt);
  CHECK(full.rounding == nn::PartialRounding::Floor);
  CHECK(full.bias == true);
  CHECK(full.str() == "prmsnorm:0.125,eps=1e-08,placement=outside,rounding=floor,bias=on");
  for (const char* text : {"none", "layernorm,eps=0.001", "rmsnorm,bias=off", "prmsnorm:0.0625",
                           "l2norm", "batchnorm,eps=1e-06", "weightnorm"})
    CHECK(nn::NormSpec::parse(nn::NormSpec::parse(text).str()).str() ==
          nn::NormSpec::parse(text).str());
}

TEST_CASE("NormSpec refuses a bad spec with a message that lists the valid ones") {
  CHECK_ERROR(nn::NormSpec::parse("rmsnrom"), "NormSpec", "'rmsnrom'", "valid specs", "layernorm",
              "prmsnorm[:p]", "weightnorm");
  CHECK_ERROR(nn::NormSpec::parse(""), "NormSpec", "valid specs");
  CHECK_ERROR(nn::NormSpec::parse("prmsnorm:1.5"), "NormSpec", "(0, 1]", "1.5");
  CHECK_ERROR(nn::NormSpec::parse("prmsnorm:abc"), "NormSpec", "'abc'", "not a number");
  CHECK_ERROR(nn::NormSpec::parse("prmsnorm:"), "NormSpec", "not a number");
  CHECK_ERROR(nn::NormSpec::parse("rmsnorm:0.5"), "NormSpec", "only prmsnorm");
  CHECK_ERROR(nn::NormSpec::parse("layernorm,eps=-1"), "NormSpec", "non-negative");
  CHECK_ERROR(nn::NormSpec::parse("layernorm,eps"), "NormSpec", "key=value");
  CHECK_ERROR(nn::NormSpec::parse("layernorm,colour=red"), "NormSpec", "unknown option",
              "colour=red");
  CHECK_ERROR(nn::NormSpec::parse("layernorm,placement=outside"), "NormSpec", "rmsnorm");
  CHECK_ERROR(nn::NormSpec::parse("rmsnorm,rounding=floor"), "NormSpec", "prmsnorm only");
  CHECK_ERROR(nn::NormSpec::parse("none,bias=on"), "NormSpec", "'none'");
  CHECK_ERROR(nn::make_norm("rmsnorm", 0), "make_norm", "features", "0");
}

TEST_CASE("make_norm builds the module the spec names, with the spec's options") {
  Generator generator(3);
  const Tensor x = randn({4, 16}, generator) * 2.0 + 1.0;
  const Tensor none;
  CHECK(nn::make_norm("none", 16)->forward(x).data_ptr<float>() == x.data_ptr<float>());
  CHECK(nn::make_norm("weightnorm", 16)->type_name() == "Identity");

  auto layer_norm = nn::make_norm("layernorm,eps=0.001", 16);
  CHECK(layer_norm->type_name() == "LayerNorm");
  CHECK(layer_norm->named_parameters().size() == 2);
  CHECK(all_close(layer_norm->forward(x), nn::layer_norm_composed(x, 1, none, none, 1e-3), 1e-5,
                  1e-5));

  auto rms = nn::make_norm("rmsnorm,placement=outside", 16);
  CHECK(rms->type_name() == "RMSNorm");
  CHECK(rms->named_parameters().size() == 1);  // gain only, as in the paper's code
  CHECK(all_close(rms->forward(x),
                  nn::rms_norm_composed(x, 1, none, none, 1e-5, EpsPlacement::OutsideSqrt),
                  1e-5, 1e-5));

  auto partial = nn::make_norm("prmsnorm:0.25,rounding=floor,bias=on", 16);
  CHECK(partial->type_name() == "pRMSNorm");
  CHECK(partial->named_parameters().size() == 2);
  CHECK(all_close(partial->forward(x), nn::partial_rms_norm_composed(x, 1, 4, none, none, 1e-5),
                  1e-5, 1e-5));

  auto l2 = nn::make_norm("l2norm", 16);
  CHECK(all_close(l2->forward(x), nn::l2_norm_composed(x, 1, none, none, 1e-5), 1e-5, 1e-5));

  // The per-channel layout of a CNN: statistics per (sample, channel) over H x W.
  const Tensor maps = randn({2, 3, 4, 5}, generator);
  auto spatial = nn::make_norm("rmsnorm", 3, nn::NormLayout::ChannelMaps);
  CHECK(all_close(spatial->forward(maps), nn::rms_norm_composed(maps, 2, none, none, 1e-5), 1e-5,
                  1e-5));

  auto batch = nn::make_norm("batchnorm,eps=1e-6", 16);
  CHECK(batch->type_name() == "BatchNorm1d");
  const Tensor normalised = batch->forward(x);
  CHECK(all_close(normalised.mean({0}), std::vector<double>(16, 0.0), 1e-5, 1e-5));
  CHECK(nn::make_norm("batchnorm", 3, nn::NormLayout::ChannelMaps)->type_name() == "BatchNorm2d");

  auto doubles = nn::make_norm("rmsnorm", 16, nn::NormLayout::Features, DType::Float64);
  CHECK(doubles->named_parameters()[0].second.dtype() == DType::Float64);
}

TEST_CASE("the invariance lab measures exactly the paper's Table 1") {
  for (std::uint64_t seed : {2019u, 7u}) {
    CAPTURE(seed);
    invariance::Settings settings;
    settings.seed = seed;
    const auto rows = invariance::measure_table(settings);
    const auto paper = invariance::paper_table();
    REQUIRE(rows.size() == paper.size());
    for (std::size_t r = 0; r < rows.size(); ++r)
      for (int column = 0; column < invariance::kTransformations; ++column) {
        CAPTURE(rows[r].method);
        CAPTURE(column);
        CAPTURE(rows[r].change[column]);
        CHECK(rows[r].invariant[column] == paper[r][column]);
        // Far from the threshold either way: round-off, or a real change.
        CHECK((rows[r].change[column] < 1e-12 || rows[r].change[column] > 1e-3));
      }
  }
}

TEST_CASE(
    "the invariance lab's report: a cell that differs from the paper is named, in every form") {
  auto rows = invariance::measure_table();
  CHECK(invariance::differences_from_paper(rows) == 0);
  CHECK(invariance::comparison_markdown(rows) == "All 30 cells agree with the paper's Table 1.\n");
  const std::string csv = invariance::table_csv(rows);
  CHECK(csv.rfind("method,transformation,invariant,paper,change\n", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 31);  // a header and 30 cells
  CHECK(csv.find("\nRMSNorm,weight matrix re-centering,no,no,") != std::string::npos);

  // RMSNorm made invariant to re-centring, as LayerNorm is: one cell now differs.
  const auto column = static_cast<int>(invariance::Transformation::WeightMatrixRecentering);
  rows[3].invariant[column] = true;
  CHECK(invariance::differences_from_paper(rows) == 1);
  CHECK(invariance::comparison_markdown(rows).find(
            "1 of 30 cells differ from the paper's Table 1:\n\n- RMSNorm, weight matrix "
            "re-centering:") == 0);
  CHECK(invariance::table_markdown(rows, false).find("| RMSNorm | ✓ | ✓ (paper: ✗) |") !=
        std::string::npos);
  CHECK(invariance::table_csv(rows).find("\nRMSNorm,weight matrix re-centering,yes,no,") !=
        std::string::npos);
}

TEST_CASE("the gradient with respect to W scales as 1/delta with W and not with x") {
  for (const auto& g : invariance::measure_gradient_scaling(4.0)) {
    CAPTURE(g.method);
    CHECK(g.weight_scaled_ratio == doctest::Approx(0.25).epsilon(1e-10));
    CHECK(g.weight_scaled_deviation < 1e-10);
    CHECK(g.input_scaled_ratio == doctest::Approx(1.0).epsilon(1e-10));
    CHECK(g.input_scaled_deviation < 1e-10);
  }
}
