#pragma once
// Words of plain text for the examples' local tasks: lowercased as Python's str.lower() does,
// split at whitespace, each punctuation mark a token of its own.
//
//   examples::word_tokens("Can't open %s.")   // can ' t open % s .

#include <string>
#include <vector>

namespace examples {

std::vector<std::string> word_tokens(const std::string& text);

// Whether a token is a mark word_tokens splits off (ASCII punctuation and the typographic
// quotes, dashes and ellipsis of European text).
bool is_punctuation_token(const std::string& token);

}  // namespace examples
