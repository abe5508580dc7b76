#pragma once
// The tokenizers BLEU applies to hypotheses and references before counting n-grams. A BLEU
// score means something only with its tokenizer named: "13a" (the default of sacreBLEU, after
// the mteval-v13a script of WMT) splits punctuation from words, "none" counts words as given.

#include <string>
#include <string_view>

namespace normgrad::text {

enum class BleuTokenizer { none, v13a };

// "13a" or "none"; any other name is an Error listing the two.
BleuTokenizer parse_bleu_tokenizer(std::string_view name);
const char* bleu_tokenizer_name(BleuTokenizer tokenizer);

// mteval-v13a's tokenisation, step for step as sacreBLEU does it:
//  1. drop "<skipped>", join "-\n" line breaks, turn other "\n" into spaces, and unescape
//     &quot; &amp; &lt; &gt;;
//  2. put spaces around ASCII punctuation but - ' , . and around every space;
//  3. split "." and "," from a preceding non-digit, then from a following non-digit, so that
//     "3.5" and "1,000" stay whole but "end." and ".NET" do not;
//  4. split "-" from a preceding digit ("2-3" becomes "2 - 3", "e-mail" stays);
//  5. collapse runs of whitespace (Python's definition) to one space and trim.
// Each step scans left to right and does not re-read what it has just written, like the
// regular-expression substitutions it mirrors.
std::u32string tokenize_13a(std::u32string_view line);

std::u32string tokenize(BleuTokenizer tokenizer, std::u32string_view line);

}  // namespace normgrad::text
