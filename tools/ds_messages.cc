// DeepSpeed ZeRO-3 fetch messages (see ds_messages.h).
#include "tools/ds_messages.h"

#include <algorithm>
#include <charconv>
#include <regex>
#include <string_view>
#include <utility>

namespace zfetch::tools {

namespace {

// The dict that starts at `open` (a '{'), up to its matching '}', skipping quoted text.
std::string_view dict_at(std::string_view text, size_t open) {
  int depth = 0;
  char quote = 0;
  for (size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return text.substr(open, i - open + 1);
    }
  }
  return text.substr(open);
}

std::optional<std::string> field(std::string_view dict, const char* pattern) {
  std::match_results<std::string_view::const_iterator> match;
  if (std::regex_search(dict.begin(), dict.end(), match, std::regex(pattern))) {
    return match[1].str();
  }
  return std::nullopt;
}

int64_t to_int(const std::string& digits) {
  int64_t value = -1;
  std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return value;
}

std::vector<int64_t> int_list(const std::string& text) {
  std::vector<int64_t> values;
  static const std::regex number("-?\\d+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number);
       it != std::sregex_iterator(); ++it) {
    values.push_back(to_int(it->str()));
  }
  return values;
}

ParamSummary parse_summary(std::string_view dict) {
  ParamSummary param;
  if (auto named = field(dict, R"('id': 'name=(\S+) id=(\d+)')")) {
    param.name = *named;
    param.id = to_int(field(dict, R"('id': 'name=\S+ id=(\d+)')").value_or("-1"));
  } else if (auto id = field(dict, R"('id': (\d+))")) {
    param.id = to_int(*id);
  }
  param.status = field(dict, R"('status': '(\w+)')").value_or("");
  param.numel = to_int(field(dict, R"('numel': (\d+))").value_or("0"));
  param.ds_numel = to_int(field(dict, R"('ds_numel': (\d+))").value_or("0"));
  param.ds_shape = int_list(field(dict, R"('ds_shape': \(([^)]*)\))").value_or(""));
  param.requires_grad = field(dict, R"('requires_grad': (\w+))").value_or("True") == "True";
  param.persist = field(dict, R"('persist': (\w+))").value_or("False") == "True";
  const std::string consumers =
      field(dict, R"('active_sub_modules': (set\(\)|\{[^}]*\}))").value_or("");
  if (consumers != "set()") {
    param.consumers = int_list(consumers);
  }
  return param;
}

// What of a message's first line is quoted: a long line (a tracing error's list of params,
// printed on one line) is cut there, marked with "...".
constexpr size_t kMaxQuotedBytes = 1000;

std::string first_line(std::string_view text, size_t offset) {
  const size_t end = text.find('\n', offset);
  std::string_view line = text.substr(offset, end == std::string_view::npos ? end : end - offset);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  if (line.size() <= kMaxQuotedBytes) {
    return std::string(line);
  }
  size_t cut = kMaxQuotedBytes;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) {
    --cut;  // not inside a UTF-8 sequence
  }
  return std::string(line.substr(0, cut)) + "...";
}

}  // namespace

std::vector<ParamSummary> parse_param_summaries(std::string_view text) {
  std::vector<ParamSummary> params;
  size_t at = 0;
  while ((at = text.find("{'id': ", at)) != std::string_view::npos) {
    const std::string_view dict = dict_at(text, at);
    params.push_back(parse_summary(dict));
    at += dict.size();
  }
  return params;
}

// The text without the `[rank3]: ` that torchrun puts before each line of a rank's output, so
// that a message broken over lines reads as DeepSpeed wrote it. Lines stay where they were.
std::string without_rank_prefixes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t newline = text.find('\n', begin);
    const size_t end = newline == std::string_view::npos ? text.size() : newline + 1;
    std::string_view line = text.substr(begin, end - begin);
    if (line.starts_with("[rank")) {
      size_t digits = 5;
      while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') {
        ++digits;
      }
      if (digits > 5 && line.substr(digits).starts_with("]:")) {
        line.remove_prefix(digits + 2);
        if (line.starts_with(' ')) {
          line.remove_prefix(1);
        }
      }
    }
    out += line;
    begin = end;
  }
  return out;
}

// A line longer than this is not one DeepSpeed printed (its longest, a tracing error listing
// a few thousand params, is a few hundred KB): it is not searched, and a message's text ends
// this far after its start, so that a pasted binary or one endless line costs linear time.
constexpr size_t kMaxMessageBytes = size_t{1} << 20;

// A line can start a message only if it holds one of these (each start below holds one): the
// start's regular expression runs on those lines alone.
constexpr std::string_view kStartNeedles[] = {
    "tracing error at step",
    "Invalidate trace cache @ step",
    "still have inflight params",
    "expect param",
    "expected param",
    "AssertionError: {'id': ",
    "is invalid for input of size 0",
    "} already in registry",
    "Cannot partition a param in flight",
    "pop from an empty deque",
    "Nested GatheredParameters",
    "Cannot free a ZeRO-3 parameter",
    "loss must be a scalar tensor",
    "returned an invalid gradient",
    "must match the size of tensor b",
    "doesn't match the broadcast shape",
    "Cannot reduce scatter",
    "unknown parameter type",
    "Error(s) in loading state_dict for",
    "params_in_bucket",
    "t.dtype for t in tensors",
    "active_backward_submodules is empty",
};

// Which kind a match of find_ds_messages' `starts` is, by a text it holds; the registry's first,
// since its summary holds `'shape'`.
constexpr std::pair<std::string_view, DsMessage::Kind> kKindOfMatch[] = {
    {"already in registry", DsMessage::Kind::RegistryEntryLeft},
    {"tracing error", DsMessage::Kind::TracingError},
    {"Invalidate", DsMessage::Kind::ModuleMismatch},
    {"still have", DsMessage::Kind::InflightParams},
    {"is invalid for input of size 0", DsMessage::Kind::PartitionedUsed},
    {"Cannot partition", DsMessage::Kind::PartitionInflight},
    {"pop from", DsMessage::Kind::StepsNotFound},
    {"Nested GatheredParameters", DsMessage::Kind::GatheredOverlap},
    {"Cannot free", DsMessage::Kind::FreeActive},
    {"loss must be", DsMessage::Kind::LossWithoutGrad},
    {"returned an invalid gradient", DsMessage::Kind::EmptiedReturn},
    {"must match the size of tensor b", DsMessage::Kind::GradIntoEmpty},
    {"doesn't match the broadcast shape", DsMessage::Kind::GradIntoEmpty},
    {"Cannot reduce scatter", DsMessage::Kind::GradSize},
    {"unknown parameter type", DsMessage::Kind::LeafGradUnreduced},
    {"loading state_dict", DsMessage::Kind::StateDictEmpty},
    {"params_in_bucket", DsMessage::Kind::BucketDuplicate},
    {"t.dtype for t in tensors", DsMessage::Kind::MixedDtypes},
    {"active_backward_submodules", DsMessage::Kind::ActiveBackwardEmpty},
};

std::vector<DsMessage> find_ds_messages(std::string_view raw) {
  const std::string unprefixed = without_rank_prefixes(raw);
  const std::string_view text(unprefixed);
  struct Start {
    size_t offset;
    uint32_t line;
    DsMessage::Kind kind;
  };
  // Where each message starts; a message runs to the next one's start.
  static const std::regex starts(
      R"(tracing error at step -?\d+|Invalidate trace cache @ step|still have inflight params|)"
      R"(expect(?:ed)? param(?:\.ds_status ==| \{)|AssertionError: \{'id': |)"
      R"(shape '\[[^\]]*\]' is invalid for input of size 0|)"
      R"(\{'id': [^\n]*?\} already in registry|Cannot partition a param in flight|)"
      R"(pop from an empty deque|Nested GatheredParameters contexts cannot overlap|)"
      R"(Cannot free a ZeRO-3 parameter while it is still active|loss must be a scalar tensor|)"
      R"(Function PreBackwardFunctionForModuleBackward returned an invalid gradient|)"
      R"(The size of tensor a \(0\) must match the size of tensor b|)"
      R"(output with shape \[[01]\] doesn't match the broadcast shape|)"
      R"(-?\d+ != \d+ Cannot reduce scatter|unknown parameter type|)"
      R"(Error\(s\) in loading state_dict for|)"
      R"(assert len\(set\(p\.ds_id for p in params_in_bucket\)\)|)"
      R"(assert len\(set\(t\.dtype for t in tensors\)\)|)"
      R"(active_backward_submodules is empty during backward pass)");
  // Every start lies within one line: the lines are searched one at a time, in order.
  std::vector<Start> found;
  uint32_t line_number = 1;
  for (size_t line_begin = 0; line_begin < text.size() && found.size() <= kMaxDsMessages;
       ++line_number) {
    const size_t newline = text.find('\n', line_begin);
    const size_t line_end = newline == std::string_view::npos ? text.size() : newline;
    const std::string_view line = text.substr(line_begin, line_end - line_begin);
    const bool candidate =
        line.size() <= kMaxMessageBytes &&
        std::any_of(std::begin(kStartNeedles), std::end(kStartNeedles),
                    [&](std::string_view needle) { return line.find(needle) != line.npos; });
    for (auto it = candidate ? std::cregex_iterator(line.data(), line.data() + line.size(), starts)
                             : std::cregex_iterator();
         it != std::cregex_iterator() && found.size() <= kMaxDsMessages; ++it) {
      const std::string match = it->str();
      // The first needle the match holds names its kind; none: a status assertion.
      DsMessage::Kind kind = DsMessage::Kind::NotAvailable;
      for (const auto& [needle, needle_kind] : kKindOfMatch) {
        if (match.find(needle) != std::string::npos) {
          kind = needle_kind;
          break;
        }
      }
      found.push_back({line_begin + static_cast<size_t>(it->position()), line_number, kind});
    }
    line_begin = line_end + 1;
  }
  found.resize(std::min(found.size(), kMaxDsMessages + 1));

  std::vector<DsMessage> messages;
  for (size_t i = 0; i < found.size(); ++i) {
    const size_t begin = found[i].offset;
    const size_t end = std::min(i + 1 < found.size() ? found[i + 1].offset : text.size(),
                                begin + kMaxMessageBytes);
    const std::string body(text.substr(begin, end - begin));
    DsMessage message;
    message.kind = found[i].kind;
    message.line = found[i].line;
    message.text = first_line(text, begin);
    std::smatch match;
    switch (message.kind) {
    case DsMessage::Kind::TracingError: {
      if (std::regex_search(body, match,
                            std::regex(R"(tracing error at step (-?\d+):\s*module id: (-?\d+), )"
                                       R"(training: (\w+))"))) {
        message.step = to_int(match[1]);
        message.module_id = to_int(match[2]);
        message.training = match[3] == "True";
      }
      const size_t but_got = body.find("but got");
      const std::string_view all(body);
      message.expected = parse_param_summaries(all.substr(0, but_got));
      if (but_got != std::string::npos) {
        message.got = parse_param_summaries(all.substr(but_got));
      }
      break;
    }
    case DsMessage::Kind::TraceTooShort:
    case DsMessage::Kind::ModuleMismatch:
      if (std::regex_search(body, match,
                            std::regex(R"(@ step (-?\d+) and module (-?\d+): cache has only )"
                                       R"((\d+) modules)"))) {
        message.kind = DsMessage::Kind::TraceTooShort;
        message.step = to_int(match[1]);
        message.module_id = to_int(match[2]);
        message.cache_length = to_int(match[3]);
      } else if (std::regex_search(
                     body, match,
                     std::regex(R"(@ step (-?\d+): expected module (-?\d+), but got module )"
                                R"((-?\d+))"))) {
        message.step = to_int(match[1]);
        message.expected_module = to_int(match[2]);
        message.module_id = to_int(match[3]);
      } else {
        continue;  // not a message DeepSpeed writes
      }
      break;
    case DsMessage::Kind::InflightParams:
    case DsMessage::Kind::NotAvailable:
    case DsMessage::Kind::FreeActive:
      message.expected = parse_param_summaries(body);
      break;
    case DsMessage::Kind::RegistryEntryLeft:
      // The one summary, up to `already in registry` (what follows is the next line's).
      message.expected = parse_param_summaries(body.substr(0, body.find("} already in") + 1));
      break;
    case DsMessage::Kind::PartitionInflight:
      break;  // the param's repr (before the text) prints its values, not its name or id
    case DsMessage::Kind::StepsNotFound: {
      // Python prints the traceback before the exception's line: the text since the previous
      // message holds it.
      const size_t since = i == 0 ? 0 : found[i - 1].offset;
      message.in_trace_build =
          text.substr(since, begin - since).find("in record_parameters") != std::string_view::npos;
      break;
    }
    case DsMessage::Kind::EmptiedReturn:
      if (std::regex_search(body, match,
                            std::regex(R"(expected shape compatible with (\[[^\]]*\]))"))) {
        message.shape = match[1];
      }
      break;
    case DsMessage::Kind::GradIntoEmpty:
      if (std::regex_search(body, match, std::regex(R"(broadcast shape (\[[^\]]*\]))"))) {
        message.shape = match[1];
      }
      break;
    case DsMessage::Kind::StateDictEmpty:
      message.partitioned_in_model =
          body.find("the shape in current model is torch.Size([0])") != std::string::npos;
      break;
    case DsMessage::Kind::LossWithoutGrad:
    case DsMessage::Kind::GradSize:
    case DsMessage::Kind::LeafGradUnreduced:
    case DsMessage::Kind::BucketDuplicate:
    case DsMessage::Kind::MixedDtypes:
    case DsMessage::Kind::ActiveBackwardEmpty:
      break;  // the text names no param
    case DsMessage::Kind::GatheredOverlap:
      if (std::regex_search(body, match, std::regex(R"(outer context: \[([^\]]*)\])"))) {
        message.ds_ids = int_list(match[1]);
      }
      break;
    case DsMessage::Kind::PartitionedUsed:
      if (std::regex_search(body, match, std::regex(R"(shape '(\[[^\]]*\])')"))) {
        message.shape = match[1];
      }
      break;
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

}  // namespace zfetch::tools
