// Reading a ds_config file as DeepSpeed reads it: DeepSpeed 0.19 opens the file with
// `hjson.load(f, object_pairs_hook=dict_raise_error_on_duplicate_keys)`, so a ds_config is
// hjson (a superset of JSON: comments, optional commas and quotes, multi-line strings) and a
// key given twice in one object is an error (internal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zfetch::model::detail {

/// Why the text is not hjson that DeepSpeed reads, and at which byte (0-based) of it.
struct HjsonError {
  size_t offset = 0;
  std::string message;
  /// For a duplicate key: where the key was first given.
  std::optional<size_t> first_offset;
};

/// An hjson document rewritten as YAML flow text, for the ds_config reader to walk with the
/// same code as an inline `deepspeed:` block. The YAML holds one node per line, so the place
/// in the original of any node is a lookup by its line.
struct HjsonDocument {
  std::string yaml;
  /// `line_origins[i]`: the byte offset in the original text of the node on line i + 1 of
  /// `yaml` (a key, a value, or the brace or bracket that opens a collection).
  std::vector<size_t> line_origins;
  std::optional<HjsonError> error;
};

/// Parses `text` as hjson-py 3.1's decoder does, and rewrites it (see HjsonDocument). Strings
/// become YAML double-quoted scalars; numbers, true, false and null plain ones; a float with
/// no fractional part below 10^10 becomes an integer, as in hjson-py. Deeper nesting than
/// `max_depth` or more than `max_nodes` keys and values are errors, so are two differences
/// from hjson-py made on purpose: an unpaired `\u` surrogate (it has no UTF-8 form, and every
/// output of zfetch stays valid UTF-8) and a number beyond double range (hjson-py raises
/// OverflowError there, which DeepSpeed does not catch). Never throws for bad input.
HjsonDocument read_hjson(std::string_view text, size_t max_depth, uint64_t max_nodes);

}  // namespace zfetch::model::detail
