#pragma once
// An image-caption retrieval data set in the layout of the order-embedding code's data folders
// (its datasets.py), so that a folder made for that code is read as it is:
//
//   FOLDER/train.txt, dev.txt, test.txt        captions, one a line, already tokenised (words
//                                              split by spaces), k a image, in image order:
//                                              lines k i ... k i + k - 1 describe image i
//   FOLDER/images/FEATURES/train.npy, ...      float32 [images, feature dim], a row an image
//
// COCO's folder as that code's authors distribute it names its dev split "val", has k = 5 and
// 4096 VGG features a image ("10crop"); a dev split is read from dev.* or else val.*. FEATURES
// may be left out when images/ holds one folder. k is the split's lines over its images.

#include <normgrad/normgrad.h>

#include <cstdint>
#include <string>
#include <vector>

namespace order_embedding {

struct RetrievalSplit {
  std::vector<std::string> captions;  // k per image, in image order
  normgrad::Tensor images;            // float32 [images, feature dim], on the CPU
  std::int64_t captions_per_image = 1;

  std::int64_t image_count() const { return images.size(0); }
  std::int64_t feature_dim() const { return images.size(1); }
  // Images [first, first + count) and their captions.
  RetrievalSplit slice(std::int64_t first, std::int64_t count) const;
};

// The one folder under FOLDER/images/, or an Error naming what is there.
std::string only_feature_set(const std::string& folder);

// Reads split `split` ("train", "dev" or "test") of the data set; `features` "" takes the only
// feature set. max_images > 0 keeps the first max_images images and their captions. Missing
// files, a feature matrix that is not 2-d, or caption lines that are not a whole multiple of
// its rows, are Errors naming the file.
RetrievalSplit load_split(const std::string& folder, const std::string& split,
                          const std::string& features = "", std::int64_t max_images = 0);

}  // namespace order_embedding
