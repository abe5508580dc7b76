#include "experiment.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/gnuplot.h"
#include "common/norm_timing.h"
#include "common/number_text.h"
#include "common/run_folder.h"
#include "run.h"
#include "timing.h"

namespace order_embedding {

namespace ng = normgrad;
using examples::format_number;
using ng::data::RankingMetrics;

namespace {

// The paper's Table 7, its own rows ("this work"): caption R@1, R@5, R@10, mean rank, then
// image R@1, R@5, R@10, mean rank.
const std::map<std::string, std::vector<double>>& paper_rows() {
  static const std::map<std::string, std::vector<double>> rows{
      {"none", {45.8, 79.7, 88.8, 5.4, 37.6, 73.6, 85.8, 7.7}},
      {"layernorm", {47.9, 79.5, 89.2, 5.3, 38.4, 74.6, 86.7, 7.5}},
      {"rmsnorm", {48.7, 79.7, 89.5, 5.3, 39.0, 74.8, 86.3, 7.5}},
      {"prmsnorm:0.0625", {46.8, 79.8, 90.3, 5.2, 39.0, 74.5, 86.3, 7.4}}};
  return rows;
}

std::string metrics_cells(const RankingMetrics& m) {
  return format_number("%.1f", m.recall_at[0]) + " | " + format_number("%.1f", m.recall_at[1]) +
         " | " + format_number("%.1f", m.recall_at[2]) + " | " + format_number("%.1f", m.mean_rank);
}

std::string table_csv(const std::vector<ExperimentRun>& runs, const RetrievalSplit& test) {
  std::ostringstream out;
  out.precision(9);
  out << "norm,caption_r1,caption_r5,caption_r10,caption_mean_rank,image_r1,image_r5,image_r10,"
         "image_mean_rank,test_images,test_captions,best_step,seconds_per_100_steps,"
         "seconds_spread,saving_over_layernorm,other_cpu\n";
  for (const ExperimentRun& run : runs) {
    out << run.norm;
    for (const RankingMetrics* m : {&run.test.caption, &run.test.image})
      out << ',' << m->recall_at[0] << ',' << m->recall_at[1] << ',' << m->recall_at[2] << ','
          << m->mean_rank;
    const auto saving = examples::saving_over_layernorm(runs, run);
    out << ',' << test.image_count() << ',' << test.captions.size() << ','
        << examples::best_record(run.history).step << ','
        << examples::run_seconds_per_100_steps(run.history) << ','
        << examples::run_seconds_spread(run.history) << ','
        << (saving ? format_number("%.3f", *saving) : "") << ','
        << (run.other_cpu ? format_number("%.4f", *run.other_cpu) : "") << '\n';
  }
  return out.str();
}

std::string curves_csv(const std::vector<ExperimentRun>& runs) {
  std::ostringstream out;
  out.precision(9);
  out << "norm,step,seconds,train_loss,dev_caption_r1,dev_caption_r10,dev_image_r1,dev_image_r5,"
         "dev_image_r10\n";
  for (const ExperimentRun& run : runs)
    for (const ValidationRecord& r : run.history)
      out << run.norm << ',' << r.step << ',' << r.seconds << ',' << r.train_loss << ','
          << r.dev.caption.recall_at[0] << ',' << r.dev.caption.recall_at[2] << ','
          << r.dev.image.recall_at[0] << ',' << r.dev.image.recall_at[1] << ','
          << r.dev.image.recall_at[2] << '\n';
  return out.str();
}

// validation.png: dev image retrieval R@1 and R@10 against steps, a panel each; nullopt when
// gnuplot is missing or fails (the CSV is there either way).
std::optional<std::string> draw_figure(const std::string& folder,
                                       const std::vector<ExperimentRun>& runs) {
  std::vector<std::string> norms;
  for (const ExperimentRun& run : runs) norms.push_back(run.norm);
  std::string body =
      "set key bottom right\nset grid\nset xlabel 'training steps'\n"
      "set multiplot layout 1,2\n";
  for (const auto& [column, title] : {std::pair{"7", "dev image retrieval R@1 (%)"},
                                      std::pair{"9", "dev image retrieval R@10 (%)"}})
    body += "set title " + examples::gnuplot_quoted(title) + "\n" +
            examples::plot_per_norm(norms, "2", column);
  return examples::draw_curves(folder, "order_embedding", "validation", 1100, 420,
                               body + "unset multiplot\n");
}

}  // namespace

std::vector<Budget> budgets() {
  return {// Small enough for a corpus of a few dozen distinct segments.
          {.name = "tiny",
           .run = {.model = {.word_dim = 8, .dim = 16},
                   .data = {.dev_images = 10},
                   .training = {.steps = 20,
                                .batch_size = 16,
                                .learning_rate = kPaperTraining.learning_rate,
                                .clip = kPaperTraining.clip,
                                .valid_every = 10}},
           .fold_images = 10,
           .local_task = {.corpus = "",
                          .out = "",
                          .feature_dim = 256,
                          .train_pairs = 30000,
                          .dev_pairs = 10,
                          .test_pairs = 20,
                          .min_words = 3,
                          .max_words = 40},
           .timing = TimingSettings{.batch = 4,
                                    .word_dim = 4,
                                    .dim = 8,
                                    .image_dim = 16,
                                    .vocabulary = 50,
                                    .rounds = {.steps = 1, .rounds = 1, .warmup = 0}}},
          {.name = "demo",
           .run = {.model = {.word_dim = 128, .dim = 256},
                   .training = {.steps = 600,
                                .batch_size = kPaperTraining.batch_size,
                                .learning_rate = kPaperTraining.learning_rate,
                                .clip = kPaperTraining.clip,
                                .valid_every = 150}},
           .timing = TimingSettings{}},
          {.name = "long",
           .run = {.model = {.word_dim = 300, .dim = 512},
                   .training = {.steps = 3000,
                                .batch_size = kPaperTraining.batch_size,
                                .learning_rate = kPaperTraining.learning_rate,
                                .clip = kPaperTraining.clip,
                                .valid_every = 300}},
           .timing = TimingSettings{.rounds = {.steps = 10, .rounds = 3, .warmup = 2}}},
          {.name = "paper",
           .run = {.model = {.word_dim = 300, .dim = 1024}, .training = kPaperTraining},
           .timing = TimingSettings{}}};
}

Budget budget_named(const std::string& name) {
  return examples::budget_named(budgets(), name, "order_embedding");
}

std::vector<std::string> paper_norms() {
  return {"none", "layernorm", "rmsnorm", "prmsnorm:0.0625"};
}

std::string table_markdown(const std::vector<ExperimentRun>& runs) {
  std::ostringstream out;
  out << "| model | caption R@1 | R@5 | R@10 | mean r | image R@1 | R@5 | R@10 | mean r | s / 100 "
         "steps | saving over LayerNorm |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ExperimentRun& run : runs) {
    const auto saving = examples::saving_over_layernorm(runs, run);
    out << "| " << run.norm << " | " << metrics_cells(run.test.caption) << " | "
        << metrics_cells(run.test.image) << " | "
        << format_number("%.2f", examples::run_seconds_per_100_steps(run.history)) << " | "
        << (saving ? format_number("%.1f%%", *saving) : "–") << " |\n";
  }
  for (const ExperimentRun& run : runs) {
    const auto paper = paper_rows().find(parse_model_norm(run.norm).str());
    if (paper == paper_rows().end()) continue;
    const std::vector<double>& v = paper->second;
    out << "| paper: " << run.norm;
    for (std::size_t i = 0; i < v.size(); ++i) out << " | " << format_number("%.1f", v[i]);
    out << " | | |\n";
  }
  return out.str();
}

std::vector<ExperimentRun> run_experiment(const ExperimentSettings& settings, ng::Device device,
                                          bool progress_bar) {
  const Budget& budget = settings.budget;
  const RunConfig& base = budget.run;
  const examples::NormSweep sweep = examples::model_sweep<ModelFolder>(
      "order_embedding", settings.out, settings.norms, base, parse_model_norm,
      {"/model/vocabulary"_json_pointer, "/model/image_dim"_json_pointer});
  const RetrievalSplit test =
      load_split(base.data.folder, "test", base.data.features, budget.test_images);
  const std::int64_t fold_images = std::min(budget.fold_images, test.image_count());
  const auto train = [&](const examples::SweepRun& run) {
    return train_in_folder(ModelFolder(run.folder), examples::with_norm(base, run.norm), device,
                           progress_bar, stdout);
  };
  const auto test_run = [&](const examples::SweepRun& run) {
    const ModelFolder folder(run.folder);
    const ng::data::RetrievalScores scores = evaluate_retrieval(
        *examples::load_trained_model<OrderEmbeddingModel>(folder, device),
        Vocabulary::load(folder.file("vocabulary.txt")), test, device, fold_images);
    std::printf("%s: test %s\n", run.norm.c_str(), scores_text(scores).c_str());
    return scores;
  };
  const std::vector<ExperimentRun> runs =
      examples::train_and_test_norms<ng::data::RetrievalScores>(sweep, train, test_run);

  const examples::RunFolder out(settings.out, "order_embedding");
  std::vector<examples::NormTiming> paper_sizes;
  if (budget.timing)
    paper_sizes = examples::time_after_runs(*budget.timing, settings.norms, time_norms, device, out,
                                            "table8_paper_sizes.csv");
  out.write_text("table7.csv", table_csv(runs, test));
  out.write_text("curves.csv", curves_csv(runs));
  const auto figure = draw_figure(settings.out, runs);
  const std::string table = table_markdown(runs);
  std::ostringstream report;
  report << "# Order embeddings: the RMSNorm paper's Table 7 in shape\n\n"
         << "Written by `order_embedding experiment` on " << examples::today_utc() << ", budget "
         << budget.name << ": data '" << base.data.folder << "', "
         << (base.data.train_images > 0 ? std::to_string(base.data.train_images) : "all")
         << " training images, words " << base.model.word_dim << ", GRU " << base.model.dim << ", "
         << base.training.steps << " steps of batches of " << base.training.batch_size
         << ", validation every " << base.training.valid_every << " steps on "
         << base.data.dev_images << " dev images, seed " << base.model.seed << ", on "
         << device.str() << ".\n\n"
         << table << "\n"
         << "Test retrieval with each run's best weights (by dev image R@1 + R@5 + R@10), in folds "
            "of "
         << fold_images << " images of the " << test.image_count()
         << " test images, averaged; caption retrieval ranks all captions "
            "for each image, image retrieval all images for each caption. Seconds per 100 steps: "
            "training alone, over the whole run. The paper's rows are MS-COCO with VGG features "
            "after training to convergence: the shape of the comparison is what carries over, "
            "not the values.\n";
  report << examples::runs_notes(runs, figure, "dev image retrieval");
  if (budget.timing) {
    const TimingSettings& t = *budget.timing;
    report << "\n## Table 8 at the paper's sizes\n\n"
           << "Each norm's training step on made-up captions of COCO's lengths: batch " << t.batch
           << ", words " << t.word_dim << ", GRU " << t.dim << ", images " << t.image_dim
           << ", a vocabulary of " << t.vocabulary << "; " << examples::rounds_text(t.rounds)
           << "\n\n"
           << examples::timing_markdown(paper_sizes, paper_table8());
  }
  out.write_text("report.md", report.str());
  std::printf("\n%s\nreport: %s/report.md\n", table.c_str(), settings.out.c_str());
  return runs;
}

}  // namespace order_embedding
