#include "control/protocol.hpp"

#include <stdexcept>

namespace hookhost::control {

std::string encode_request(const std::vector<std::string>& words) {
  std::string line;
  for (const auto& word : words) {
    if (word.find_first_of(std::string("\t\n\0", 3)) != std::string::npos)
      throw std::invalid_argument(
          "'" + word + "' holds a tab, a newline or a NUL, which a request cannot carry");
    if (!line.empty()) line += '\t';
    line += word;
  }
  return line + '\n';
}

std::optional<std::vector<std::string>> decode_request(const std::string& line) {
  if (line.empty()) return std::nullopt;
  std::vector<std::string> words;
  std::size_t start = 0;
  for (;;) {
    const std::size_t tab = line.find('\t', start);
    words.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return words;
}

std::string encode_reply(const Reply& reply) {
  std::string text = reply.text;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return (reply.ok ? "ok\n" : reply.needs_consent ? "refused\n" : "error\n") + text;
}

Reply decode_reply(const std::string& bytes) {
  const std::size_t eol = bytes.find('\n');
  const std::string first = bytes.substr(0, eol);
  const std::string rest = eol == std::string::npos ? "" : bytes.substr(eol + 1);
  if (first == "ok") return {true, rest};
  if (first == "error") return {false, rest};
  if (first == "refused") return {false, rest, true};
  return {false, "the job's reply was cut short or is not hookhost ctl's (" +
                     std::to_string(bytes.size()) + " bytes)\n"};
}

}  // namespace hookhost::control
