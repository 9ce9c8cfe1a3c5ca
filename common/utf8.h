// UTF-8 validation. Protobuf refuses to parse a string field that is not valid UTF-8,
// so text that ends up in a message (names in a PipelineSpec, a campaign file sent to
// the coordinator) is checked where it is read, and refused with an error that says
// where, instead of producing a message the receiver drops as unparseable.
#pragma once

#include <cstddef>
#include <string_view>

namespace schedfarm {

// The offset of the first byte of `text` that is not part of a well-formed UTF-8
// sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or
// text.size() when all of it is valid.
inline size_t FirstInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    unsigned char min_second = 0x80, max_second = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) min_second = 0xA0;  // overlong
      if (c == 0xED) max_second = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) min_second = 0x90;  // overlong
      if (c == 0xF4) max_second = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    const unsigned char second = static_cast<unsigned char>(text[i + 1]);
    if (second < min_second || second > max_second) return i;
    for (size_t k = 2; k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[i + k]);
      if (next < 0x80 || next > 0xBF) return i;
    }
    i += length;
  }
  return text.size();
}

inline bool IsValidUtf8(std::string_view text) { return FirstInvalidUtf8(text) == text.size(); }

}  // namespace schedfarm
