// <hookhost/sdk/json.hpp>: every text, whatever bytes it holds, becomes one valid JSON string
// literal; the edges are those of RFC 3629 (the shortest form, surrogates, U+10FFFF) and of JSON's
// escapes (the control characters, '"' and '\').
#include <gtest/gtest.h>

#include <string>

#include <hookhost/sdk/json.hpp>

namespace {
namespace HOOKHOST_TEST_FILE {

using hookhost::json_string;

TEST(SdkJson, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_string(""), "\"\"");
  EXPECT_EQ(json_string("say \"hi\" \\ back"), R"("say \"hi\" \\ back")");
  EXPECT_EQ(json_string("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(json_string(std::string("\x00\x01\x1f", 3)), R"("\u0000\u0001\u001f")");
  EXPECT_EQ(json_string("\x20\x7f/"), "\" \x7f/\"");  // space, DEL and '/' need no escape
}

TEST(SdkJson, KeepsValidUtf8AtEveryLengthAndItsLimits) {
  EXPECT_EQ(json_string("caf\xC3\xA9"), "\"caf\xC3\xA9\"");            // 2 bytes
  EXPECT_EQ(json_string("\xC2\x80"), "\"\xC2\x80\"");                  // U+0080, the first
  EXPECT_EQ(json_string("\xE2\x82\xAC"), "\"\xE2\x82\xAC\"");          // 3 bytes, the euro
  EXPECT_EQ(json_string("\xED\x9F\xBF"), "\"\xED\x9F\xBF\"");          // U+D7FF
  EXPECT_EQ(json_string("\xEE\x80\x80"), "\"\xEE\x80\x80\"");          // U+E000
  EXPECT_EQ(json_string("\xF0\x9F\x98\x80"), "\"\xF0\x9F\x98\x80\"");  // 4 bytes
  EXPECT_EQ(json_string("\xF4\x8F\xBF\xBF"), "\"\xF4\x8F\xBF\xBF\"");  // U+10FFFF, the last
}

TEST(SdkJson, ReplacesEachByteOfInvalidUtf8) {
  EXPECT_EQ(json_string("bad\xFF"), R"("bad\ufffd")");
  EXPECT_EQ(json_string("\xC0\x80"), R"("\ufffd\ufffd")");            // an overlong NUL
  EXPECT_EQ(json_string("\xE0\x80\x80"), R"("\ufffd\ufffd\ufffd")");  // overlong, 3 bytes
  EXPECT_EQ(json_string("\xED\xA0\x80"), R"("\ufffd\ufffd\ufffd")");  // a surrogate, U+D800
  EXPECT_EQ(json_string("\xF4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");  // > U+10FFFF
  EXPECT_EQ(json_string("\x80"), R"("\ufffd")");              // a lone continuation
  EXPECT_EQ(json_string("x\xE2\x82"), R"("x\ufffd\ufffd")");  // cut at the text's end
  EXPECT_EQ(json_string("\xC3("), R"("\ufffd(")");            // lead, then no continuation
}

TEST(SdkJson, AppendsToWhatIsThere) {
  std::string line = "{\"name\":";
  hookhost::append_json_string(line, "loss");
  EXPECT_EQ(line, R"({"name":"loss")");
  const std::string huge(1 << 20, '"');
  EXPECT_EQ(json_string(huge).size(), 2 * huge.size() + 2);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
