#include "experiment.h"

#include <optional>
#include <sstream>

#include "baselines.h"
#include "common/gnuplot.h"
#include "common/norm_timing.h"
#include "common/number_text.h"
#include "common/run_folder.h"
#include "run.h"
#include "timing.h"

namespace attentive_reader {

namespace ng = normgrad;
using examples::format_number;

namespace {

std::string table_csv(const std::vector<ExperimentRun>& runs, const BaselineErrors& baseline) {
  std::ostringstream out;
  out.precision(9);
  out << "norm,valid_error,best_step,test_error,test_questions,seconds_per_100_steps,"
         "seconds_spread,saving_over_layernorm,other_cpu,test_guess_error,test_frequent_error\n";
  for (const ExperimentRun& run : runs) {
    const ValidationRecord& best = examples::best_record(run.history);
    const auto saving = examples::saving_over_layernorm(runs, run);
    out << run.norm << ',' << best.valid_error << ',' << best.step << ',' << run.test.error << ','
        << run.test.questions << ',' << examples::run_seconds_per_100_steps(run.history) << ','
        << examples::run_seconds_spread(run.history) << ','
        << (saving ? format_number("%.3f", *saving) : "") << ','
        << (run.other_cpu ? format_number("%.4f", *run.other_cpu) : "") << ',' << baseline.guess
        << ',' << baseline.frequent << '\n';
  }
  return out.str();
}

std::string curves_csv(const std::vector<ExperimentRun>& runs) {
  std::ostringstream out;
  out.precision(9);
  out << "norm,step,seconds,train_loss,train_error,valid_error,valid_loss\n";
  for (const ExperimentRun& run : runs)
    for (const ValidationRecord& r : run.history)
      out << run.norm << ',' << r.step << ',' << r.seconds << ',' << r.train_loss << ','
          << r.train_error << ',' << r.valid_error << ',' << r.valid_loss << '\n';
  return out.str();
}

// Validation error against steps for each norm, and the error of answering with the
// document's most frequent entity as a dashed line.
std::optional<std::string> draw_figure(const std::string& folder,
                                       const std::vector<ExperimentRun>& runs,
                                       double frequent_error) {
  std::vector<std::string> norms;
  for (const ExperimentRun& run : runs) norms.push_back(run.norm);
  std::string plot = examples::plot_per_norm(norms, "2", "(100 * $6)");
  plot.pop_back();  // its newline
  const std::string body =
      "set key top right\nset grid\nset xlabel 'training steps'\n"
      "set ylabel 'validation error (%)'\n"
      "set title " +
      examples::gnuplot_quoted("The attentive reader: validation error (the paper's Figure 5)") +
      "\n" + plot + ", " + format_number("%.3f", 100 * frequent_error) +
      " with lines dashtype 2 linecolor 'gray40' title " +
      examples::gnuplot_quoted("the most frequent entity") + "\n";
  return examples::draw_curves(folder, "attentive_reader", "validation", 800, 500, body);
}

}  // namespace

std::vector<Budget> budgets() {
  return {{.name = "tiny",
           .run = {.model = {.dim = 8, .answers = "document"},
                   .data = {.training_questions = 200, .validation_questions = 50},
                   .training = {.steps = 20,
                                .batch_size = 8,
                                .learning_rate = 1e-3,
                                .clip = kPaperTraining.clip,
                                .valid_every = 10}},
           .threads = 1,
           .timing = TimingSettings{.batch = 3,
                                    .dim = 4,
                                    .vocabulary = 600,
                                    .min_document = 5,
                                    .max_document = 9,
                                    .min_query = 2,
                                    .max_query = 4,
                                    .rounds = {.steps = 1, .rounds = 1, .warmup = 0}}},
          // The demo's documents are 2 segments (20 tokens on average), on which the reader learns
          // within its minutes; on 4 it needed thousands of steps more to leave the frequent
          // entity.
          {.name = "demo",
           .run = {.model = {.dim = 64, .dropout = 0.1, .answers = "document"},
                   .training = {.steps = 2000,
                                .batch_size = 32,
                                .learning_rate = 2e-3,
                                .clip = kPaperTraining.clip,
                                .valid_every = 250}},
           .document_segments = 2,
           .threads = 1,
           .timing = TimingSettings{}},
          {.name = "long",
           .run = {.model = {.dim = 128, .dropout = 0.1, .answers = "document"},
                   .training = {.steps = 10000,
                                .batch_size = 64,
                                .learning_rate = 1e-3,
                                .clip = kPaperTraining.clip,
                                .valid_every = 500}},
           .timing = TimingSettings{.rounds = {.steps = 5, .rounds = 3, .warmup = 1}}},
          {.name = "paper",
           .run = {.model = {.dim = 240, .answers = "vocabulary"},
                   .training = {.steps = 300000,
                                .batch_size = 64,
                                .learning_rate = 8e-5,
                                .clip = kPaperTraining.clip,
                                .valid_every = 1000}},
           .timing = TimingSettings{}}};
}

Budget budget_named(const std::string& name) {
  return examples::budget_named(budgets(), name, "attentive_reader");
}

std::vector<std::string> paper_norms() {
  return {"none", "batchnorm", "layernorm", "rmsnorm", "prmsnorm:0.0625"};
}

std::string table_markdown(const std::vector<ExperimentRun>& runs) {
  std::ostringstream out;
  out << "| model | lowest validation error | at step | test error | s / 100 steps | saving over "
         "LayerNorm | paper: s / 100 steps |\n|---|---|---|---|---|---|---|\n";
  for (const ExperimentRun& run : runs) {
    const ValidationRecord& best = examples::best_record(run.history);
    const auto saving = examples::saving_over_layernorm(runs, run);
    const auto paper = paper_table6().find(ng::nn::NormSpec::parse(run.norm).str());
    out << "| " << run.norm << " | " << format_number("%.2f%%", 100 * best.valid_error) << " | "
        << best.step << " | " << format_number("%.2f%%", 100 * run.test.error) << " | "
        << format_number("%.2f", examples::run_seconds_per_100_steps(run.history)) << " | "
        << (saving ? format_number("%.1f%%", *saving) : "–") << " | "
        << (paper != paper_table6().end() ? format_number("%.0f", paper->second) : "–") << " |\n";
  }
  return out.str();
}

std::vector<ExperimentRun> run_experiment(const ExperimentSettings& settings, ng::Device device,
                                          bool progress_bar) {
  const RunConfig& base = settings.budget.run;
  const examples::NormSweep sweep =
      examples::model_sweep<ModelFolder>("attentive_reader", settings.out, settings.norms, base,
                                         parse_model_norm, {"/model/vocabulary"_json_pointer});
  const std::vector<Question> test = load_questions(base.data.folder, "test");
  const BaselineErrors test_baseline = baseline_errors(test);
  const BaselineErrors valid_baseline = baseline_errors(
      load_questions(base.data.folder, "validation", base.data.validation_questions));
  const auto train = [&](const examples::SweepRun& run) {
    return train_in_folder(ModelFolder(run.folder), examples::with_norm(base, run.norm), device,
                           progress_bar, stdout);
  };
  const auto test_run = [&](const examples::SweepRun& run) {
    const ModelFolder folder(run.folder);
    const Evaluation result =
        evaluate_questions(*examples::load_trained_model<AttentiveReader>(folder, device), test,
                           ReaderVocabulary::load(folder.file("vocabulary.txt")), device);
    std::printf("%s: test error %.2f%% on %lld questions\n", run.norm.c_str(), 100 * result.error,
                static_cast<long long>(result.questions));
    return result;
  };
  const std::vector<ExperimentRun> runs =
      examples::train_and_test_norms<Evaluation>(sweep, train, test_run);

  const examples::RunFolder out(settings.out, "attentive_reader");
  std::vector<examples::NormTiming> paper_sizes;
  const std::optional<TimingSettings>& timing = settings.budget.timing;
  if (timing)
    paper_sizes = examples::time_after_runs(*timing, settings.norms, time_norms, device, out,
                                            "table6_paper_sizes.csv");
  out.write_text("table6.csv", table_csv(runs, test_baseline));
  out.write_text("curves.csv", curves_csv(runs));
  const auto figure = draw_figure(settings.out, runs, valid_baseline.frequent);
  const std::string table = table_markdown(runs);
  std::ostringstream report;
  report << "# The attentive reader: the RMSNorm paper's Table 6 in shape\n\n"
         << "Written by `attentive_reader experiment` on " << examples::today_utc() << ", budget "
         << settings.budget.name << ": questions '" << base.data.folder << "', " << base.model.dim
         << " units, " << base.training.steps << " steps of batches of " << base.training.batch_size
         << " at learning rate " << base.training.learning_rate << ", answers among "
         << (base.model.answers == "document" ? "the document's entities" : "the whole vocabulary")
         << ", dropout " << base.model.dropout << ", validation every " << base.training.valid_every
         << " steps, seed " << base.model.seed << ", on " << device.str() << " with "
         << ng::get_num_threads() << " CPU threads.\n\n"
         << table << "\n"
         << "The test error is that of each run's weights at its lowest validation error. Seconds "
            "per 100 steps: training alone, over the whole run. The paper's column is the CNN "
            "corpus at its sizes, on a GPU of 2019 in Theano: the shape of the comparison is "
            "what carries over, not the values; the paper reports no error, only the curves of "
            "its Figure 5.\n\n"
         << "Answering without reading, on the test questions: a guess among the document's "
            "entities errs "
         << format_number("%.2f%%", 100 * test_baseline.guess)
         << ", the entity the document names most often "
         << format_number("%.2f%%", 100 * test_baseline.frequent)
         << " (the dashed line in the figure: the same on the validation questions, "
         << format_number("%.2f%%", 100 * valid_baseline.frequent) << ").\n";
  report << examples::runs_notes(runs, figure, "validation error");
  if (timing) {
    const TimingSettings& t = *timing;
    report << "\n## Table 6 at the paper's sizes\n\n"
           << "Each norm's training step on made-up questions of the real data's shape: batch "
           << t.batch << ", " << t.dim << " units, " << t.vocabulary << " words of which "
           << t.entities << " entity ids, documents of " << t.min_document << " to "
           << t.max_document << " tokens and queries of " << t.min_query << " to " << t.max_query
           << ", answers over the whole vocabulary; " << examples::rounds_text(t.rounds) << "\n\n"
           << examples::timing_markdown(paper_sizes, paper_table6());
  }
  out.write_text("report.md", report.str());
  std::printf("\n%s\nreport: %s/report.md\n", table.c_str(), settings.out.c_str());
  return runs;
}

}  // namespace attentive_reader
