#include "dataset.h"

#include <filesystem>

#include "text/text_file.h"

namespace order_embedding {

namespace ng = normgrad;
namespace fs = std::filesystem;

RetrievalSplit RetrievalSplit::slice(std::int64_t first, std::int64_t count) const {
  NG_CHECK(first >= 0 && count >= 0 && first + count <= image_count(), "order_embedding",
           "images [", first, ", ", first + count, ") of a split of ", image_count());
  RetrievalSplit part;
  part.captions_per_image = captions_per_image;
  part.images = images.narrow(0, first, count);
  part.captions.assign(captions.begin() + first * captions_per_image,
                       captions.begin() + (first + count) * captions_per_image);
  return part;
}

std::string only_feature_set(const std::string& folder) {
  const fs::path images = fs::path(folder) / "images";
  std::error_code error;
  NG_CHECK(fs::is_directory(images, error), "order_embedding", "'", folder,
           "' has no images/ folder: a data set holds images/FEATURES/{train,dev,test}.npy");
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(images))
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  NG_CHECK(names.size() == 1, "order_embedding", "'", images.string(), "' holds ", names.size(),
           " feature sets; name one with --features");
  return names.front();
}

RetrievalSplit load_split(const std::string& folder, const std::string& split,
                          const std::string& features, std::int64_t max_images) {
  const std::string feature_set = features.empty() ? only_feature_set(folder) : features;
  // The original code reads COCO's dev split from val.*.
  std::string name = split;
  const fs::path root(folder);
  if (split == "dev" && !fs::exists(root / "dev.txt") && fs::exists(root / "val.txt")) name = "val";
  const fs::path text = root / (name + ".txt");
  const fs::path matrix = root / "images" / feature_set / (name + ".npy");
  NG_CHECK(fs::exists(text), "order_embedding", "the ", split, " captions '", text.string(),
           "' are missing");
  NG_CHECK(fs::exists(matrix), "order_embedding", "the ", split, " image features '",
           matrix.string(), "' are missing");
  RetrievalSplit result;
  result.images = ng::data::read_npy(matrix.string());
  NG_CHECK(result.images.dim() == 2 && result.images.size(0) >= 1, "order_embedding", "'",
           matrix.string(), "' must hold [images, features], got ", result.images.shape());
  result.captions = ng::text::read_text_lines(text.string());
  while (!result.captions.empty() && result.captions.back().empty()) result.captions.pop_back();
  const auto lines = static_cast<std::int64_t>(result.captions.size());
  const std::int64_t images = result.images.size(0);
  NG_CHECK(lines >= images && lines % images == 0, "order_embedding", "'", text.string(), "' has ",
           lines, " captions for the ", images, " images of '", matrix.string(),
           "': each image needs the same number of captions");
  result.captions_per_image = lines / images;
  for (std::int64_t i = 0; i < lines; ++i)
    NG_CHECK(
        result.captions[static_cast<std::size_t>(i)].find_first_not_of(' ') != std::string::npos,
        "order_embedding", "line ", i + 1, " of '", text.string(), "' is empty");
  if (max_images > 0 && max_images < images) return result.slice(0, max_images);
  return result;
}

}  // namespace order_embedding
