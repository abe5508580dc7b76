#pragma once
// A small English-German parallel corpus written for the tests: sentences built from a few
// templates and word lists (software messages, the domain of the demo corpus), so that the
// subword, dataset and batching tests have text with real structure: shared words, longer and
// shorter lines, umlauts and placeholders.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace testing {

struct ParallelCorpusFiles {
  std::string source;  // English
  std::string target;  // German
  std::size_t lines = 0;
};

// Writes <tmp>/normgrad_<name>.en and .de with `lines` aligned sentences.
inline ParallelCorpusFiles small_parallel_corpus(const std::string& name, std::size_t lines = 600) {
  struct Word {
    const char* en;
    const char* de;
  };
  const std::vector<Word> objects{{"file", "Datei"},          {"folder", "Ordner"},
                                  {"window", "Fenster"},      {"image", "Bild"},
                                  {"document", "Dokument"},   {"message", "Nachricht"},
                                  {"setting", "Einstellung"}, {"printer", "Drucker"},
                                  {"account", "Konto"},       {"password", "Passwort"}};
  const std::vector<Word> verbs{{"opened", "geöffnet"},  {"saved", "gespeichert"},
                                {"deleted", "gelöscht"}, {"found", "gefunden"},
                                {"printed", "gedruckt"}, {"closed", "geschlossen"}};
  const std::vector<Word> adjectives{
      {"new", "neue"}, {"old", "alte"}, {"large", "große"}, {"empty", "leere"}};
  ParallelCorpusFiles files;
  const auto base = std::filesystem::temp_directory_path() / ("normgrad_" + name);
  files.source = base.string() + ".en";
  files.target = base.string() + ".de";
  files.lines = lines;
  std::ofstream en(files.source, std::ios::binary);
  std::ofstream de(files.target, std::ios::binary);
  std::uint64_t state = 12345;
  auto pick = [&state](std::size_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>((state >> 33) % n);
  };
  for (std::size_t i = 0; i < lines; ++i) {
    const Word& o = objects[pick(objects.size())];
    const Word& v = verbs[pick(verbs.size())];
    const Word& a = adjectives[pick(adjectives.size())];
    switch (pick(5)) {
      case 0:
        en << "the " << o.en << " could not be " << v.en << "\n";
        de << "die " << o.de << " konnte nicht " << v.de << " werden\n";
        break;
      case 1:
        en << "the " << a.en << " " << o.en << " was " << v.en << "\n";
        de << "die " << a.de << " " << o.de << " wurde " << v.de << "\n";
        break;
      case 2:
        en << o.en << "\n";
        de << o.de << "\n";
        break;
      case 3:
        en << "Do not open the " << o.en << " \"%s\"\n";
        de << "Öffnen Sie die " << o.de << " „%s“ nicht\n";
        break;
      default:
        en << "%d " << o.en << "s were " << v.en << " and the " << a.en << " " << o.en
           << " was not " << v.en << " because it is " << a.en << "\n";
        de << "%d " << o.de << " wurden " << v.de << " und die " << a.de << " " << o.de
           << " wurde nicht " << v.de << ", weil sie " << a.de << " ist\n";
        break;
    }
  }
  return files;
}

// A corpus folder as scripts/build_corpus writes one: train, dev and test in both languages
// (200, 20 and 24 lines), each written under <tmp> as `name`_train and so on, then copied in.
inline std::string corpus_folder(const std::string& folder, const std::string& name) {
  std::filesystem::create_directories(folder);
  for (const auto& [part, lines] :
       {std::pair{"train", 200}, std::pair{"dev", 20}, std::pair{"test", 24}}) {
    const auto files = small_parallel_corpus(name + "_" + part, static_cast<std::size_t>(lines));
    std::filesystem::copy_file(files.source, folder + "/" + part + ".en",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(files.target, folder + "/" + part + ".de",
                               std::filesystem::copy_options::overwrite_existing);
  }
  return folder;
}

// A translation example's training settings on these files with a tiny budget: 8 steps, dev
// loss, dev BLEU and a training state every 4.
template <class TrainingSettings>
void use_tiny_run(TrainingSettings& t, const ParallelCorpusFiles& train,
                  const ParallelCorpusFiles& dev) {
  t.train_source = train.source;
  t.train_target = train.target;
  t.dev_source = dev.source;
  t.dev_target = dev.target;
  t.max_steps = 8;
  t.dev_loss_every = 4;
  t.dev_bleu_every = 4;
  t.checkpoint_every = 4;
}

}  // namespace testing
