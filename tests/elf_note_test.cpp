// Reading plugin metadata from the ELF note without loading: real fixture files, copied into a
// temporary folder and damaged in the ways that happen in practice.
#include "plugins/elf_note.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <random>
#include <vector>

#include "plugin_files.hpp"
#include "test_support.hpp"

namespace hookhost {

// Readable failure output for parameter comparisons.
void PrintTo(const ParamSpec& p, std::ostream* os) {
  *os << "{" << p.name << ", " << param_type_name(p.type) << ", flag " << static_cast<int>(p.flag)
      << ", default '" << p.default_value << "', help '" << p.help << "'}";
}
void PrintTo(const PluginNeeds& n, std::ostream* os) {
  auto list = [os](const char* key, const std::vector<std::string>& items) {
    for (const std::string& item : items) *os << key << "=" << item << " ";
  };
  *os << "{ ";
  list("read", n.read);
  list("write", n.write);
  list("read.param", n.read_params);
  list("write.param", n.write_params);
  *os << (n.network ? "network " : "") << (n.processes ? "processes " : "") << "}";
}

namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace hookhost::testing;

ParamSpec param(std::string name, hh_param_type type, ParamFlag flag, std::string def,
                std::string help) {
  return {std::move(name), type, flag, std::move(def), std::move(help)};
}

// A note descriptor: format, header size, ABI major, minor, min minor, any extra header words a
// later minor may add, then the text (NUL-terminated unless told).
std::vector<std::byte> descriptor(uint32_t format, uint32_t major, uint32_t minor,
                                  const std::string& text, bool terminate = true,
                                  uint32_t min_minor = 0, uint32_t extra_header_words = 0) {
  const uint32_t header = 20 + 4 * extra_header_words;
  std::vector<std::byte> d(header + text.size() + (terminate ? 1 : 0));
  std::memcpy(d.data(), &format, 4);
  std::memcpy(d.data() + 4, &header, 4);
  std::memcpy(d.data() + 8, &major, 4);
  std::memcpy(d.data() + 12, &minor, 4);
  std::memcpy(d.data() + 16, &min_minor, 4);
  for (uint32_t i = 0; i < extra_header_words; ++i) std::memset(d.data() + 20 + 4 * i, 0x5a, 4);
  std::memcpy(d.data() + header, text.data(), text.size());
  return d;
}

std::string note_error(const std::string& text) {
  NoteReadResult r = parse_note_descriptor(descriptor(HH_NOTE_FORMAT, 1, 0, text));
  EXPECT_FALSE(r.metadata) << "accepted: " << text;
  return r.error;
}

constexpr const char* kGoodHeader = "id=x\nversion=1\ndescription=d\n";

// ---- Metadata of well-formed plugins ----------------------------------------------------------

TEST(ElfNote, ReadsPureCPluginMetadata) {
  NoteReadResult r = read_plugin_note(fixture_plugin("good_c"));
  ASSERT_TRUE(r.metadata) << r.error;
  const PluginMetadata& m = *r.metadata;
  EXPECT_EQ(m.id, "good_c");
  EXPECT_EQ(m.version, "1.2.3");
  EXPECT_EQ(m.description, "A pure C test plugin");
  EXPECT_EQ(m.abi_major, uint32_t{HH_ABI_MAJOR});
  EXPECT_EQ(m.abi_minor, uint32_t{HH_ABI_MINOR});
  std::vector<ParamSpec> expected = {
      param("threshold", HH_PARAM_TYPE_FLOAT, ParamFlag::defaulted, "0.5",
            "stop when the loss falls below this"),
      param("every_n", HH_PARAM_TYPE_INT, ParamFlag::required, "", "log every n steps"),
      param("verbose", HH_PARAM_TYPE_BOOL, ParamFlag::defaulted, "false", "log more"),
      param("label", HH_PARAM_TYPE_STRING, ParamFlag::optional, "", "a label for the log"),
      param("tensors", HH_PARAM_TYPE_STRING_LIST, ParamFlag::defaulted, "loss,accuracy",
            "tensors to watch"),
      // Default text given, but the flag is OPTIONAL: it is dropped.
      param("unit", HH_PARAM_TYPE_STRING, ParamFlag::optional, "", "unit of the threshold"),
  };
  EXPECT_EQ(m.params, expected);
  ASSERT_NE(m.find_param("tensors"), nullptr);
  EXPECT_EQ(m.find_param("tensors")->default_value, "loss,accuracy");
  EXPECT_EQ(m.find_param("nope"), nullptr);
}

TEST(ElfNote, ReadsCxxSdkPluginMetadata) {
  NoteReadResult r = read_plugin_note(fixture_plugin("good_cxx"));
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->id, "good_cxx");
  EXPECT_EQ(r.metadata->version, "0.3.0");
  EXPECT_EQ(r.metadata->description, "A C++ SDK test plugin");
  std::vector<ParamSpec> expected = {
      param("window", HH_PARAM_TYPE_INT, ParamFlag::defaulted, "10", "steps per window"),
      param("tag", HH_PARAM_TYPE_STRING, ParamFlag::required, "", "tag written with every count"),
      param("ratio", HH_PARAM_TYPE_FLOAT, ParamFlag::optional, "", "optional ratio"),
  };
  EXPECT_EQ(r.metadata->params, expected);
}

TEST(ElfNote, RefusesAnotherAbiMajorBeforeReadingTheText) {
  NoteReadResult r = read_plugin_note(fixture_plugin("abi_major2"));
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, AllOf(HasSubstr("built for hookhost ABI 2.0"),
                             HasSubstr("major versions must match"), Not(HasSubstr("malformed"))));
}

TEST(ElfNoteDescriptor, VersionIsCheckedBeforeTheText) {
  // Text this host could not parse, from a plugin that needs a newer host: "upgrade", never
  // "malformed".
  NoteReadResult newer = parse_note_descriptor(
      descriptor(HH_NOTE_FORMAT, 1, HH_ABI_MINOR + 3, "not key value\n", true, HH_ABI_MINOR + 2));
  EXPECT_FALSE(newer.metadata);
  EXPECT_THAT(newer.error,
              AllOf(HasSubstr("built for hookhost ABI 1." + std::to_string(HH_ABI_MINOR + 3) +
                              " and needs at least 1." + std::to_string(HH_ABI_MINOR + 2)),
                    HasSubstr("this host supports 1." + std::to_string(HH_ABI_MINOR)),
                    HasSubstr("upgrade the host"), Not(HasSubstr("malformed"))));
  NoteReadResult major = parse_note_descriptor(descriptor(HH_NOTE_FORMAT, 3, 0, "garbage"));
  EXPECT_THAT(major.error, HasSubstr("built for hookhost ABI 3.0"));
  NoteReadResult old = parse_note_descriptor(descriptor(1, 1, 0, kGoodHeader));
  EXPECT_THAT(old.error, HasSubstr("before ABI 1.0"));
}

TEST(ElfNoteDescriptor, ReadsANewerMinorsNoteThatRunsOnThisHost) {
  // Built against a later minor that added a header word, a key and a param field, but able to
  // run on this host (min minor 0).
  NoteReadResult r = parse_note_descriptor(descriptor(
      HH_NOTE_FORMAT, 1, HH_ABI_MINOR + 1,
      std::string(kGoodHeader) + "homepage=example.org\nparam=n\tINT\tDEFAULT\t2\thelp\tNEW\n",
      true, 0, 2));
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->abi_minor, HH_ABI_MINOR + 1);
  EXPECT_EQ(r.metadata->min_abi_minor, 0u);
  ASSERT_EQ(r.metadata->params.size(), 1u);
  EXPECT_EQ(r.metadata->params[0].default_value, "2");
}

TEST(ElfNoteDescriptor, RefusesADefaultThatIsNotOfItsType) {
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "param=n\tINT\tDEFAULT\tthree\thelp\n"),
              AllOf(HasSubstr("param 'n'"), HasSubstr("the default 'three' is not an integer"),
                    HasSubstr("the plugin's author must fix")));
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "param=f\tFLOAT\tDEFAULT\tinf\thelp\n"),
              HasSubstr("not a finite number"));
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "param=b\tBOOL\tDEFAULT\tmaybe\thelp\n"),
              HasSubstr("is not a bool"));
}

TEST(ElfNote, ReadsStrippedCopy) {
  if (std::system("command -v strip >/dev/null 2>&1") != 0) GTEST_SKIP() << "strip not installed";
  TempDir dir;
  fs::path copy = copy_plugin(fixture_plugin("good_c"), dir.path());
  std::string command = "strip --strip-all '" + copy.string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0);
  ASSERT_LT(fs::file_size(copy), fs::file_size(fixture_plugin("good_c")));
  NoteReadResult r = read_plugin_note(copy);
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(*r.metadata, *read_plugin_note(fixture_plugin("good_c")).metadata);
}

// ---- Files that are not plugins for this host -------------------------------------------------

TEST(ElfNote, RejectsTextFile) {
  TempDir dir;
  write_file(dir / "readme.so", "this is not a plugin\n");
  NoteReadResult r = read_plugin_note(dir / "readme.so");
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, HasSubstr("not an ELF file"));
}

TEST(ElfNote, RejectsEmptyFile) {
  TempDir dir;
  write_file(dir / "empty.so", "");
  EXPECT_THAT(read_plugin_note(dir / "empty.so").error, HasSubstr("not an ELF file"));
}

TEST(ElfNote, RejectsMissingFileAndDirectory) {
  TempDir dir;
  EXPECT_THAT(read_plugin_note(dir / "absent.so").error, HasSubstr("cannot open"));
  EXPECT_THAT(read_plugin_note(dir.path()).error, HasSubstr("not a regular file"));
}

TEST(ElfNote, RejectsWrongMachine) {
  TempDir dir;
  fs::path copy = copy_plugin(fixture_plugin("good_c"), dir.path());
#if defined(__aarch64__)
  patch_file<uint16_t>(copy, kMachineOffset, EM_X86_64);
  const char* built_for = "built for EM_X86_64";
#else
  patch_file<uint16_t>(copy, kMachineOffset, EM_AARCH64);
  const char* built_for = "built for EM_AARCH64";
#endif
  NoteReadResult r = read_plugin_note(copy);
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, HasSubstr("wrong machine"));
  EXPECT_THAT(r.error, HasSubstr(built_for));
#if defined(__x86_64__)
  EXPECT_THAT(r.error, HasSubstr("this host is x86-64"));
#endif
}

TEST(ElfNote, RejectsWrongElfClass) {
  TempDir dir;
  fs::path copy = copy_plugin(fixture_plugin("good_c"), dir.path());
  patch_file<uint8_t>(copy, EI_CLASS, ELFCLASS32);
  NoteReadResult r = read_plugin_note(copy);
  EXPECT_THAT(r.error, HasSubstr("wrong ELF class"));
  EXPECT_THAT(r.error, HasSubstr("32-bit"));
}

TEST(ElfNote, RejectsExecutable) {
  TempDir dir;
  fs::path copy = copy_plugin(fixture_plugin("good_c"), dir.path());
  patch_file<uint16_t>(copy, kTypeOffset, ET_EXEC);
  NoteReadResult r = read_plugin_note(copy);
  EXPECT_THAT(r.error, HasSubstr("not a shared object"));
  EXPECT_THAT(r.error, HasSubstr("ET_EXEC"));
}

TEST(ElfNote, RejectsTruncatedSegment) {
  TempDir dir;
  fs::path copy = truncated_copy(fixture_plugin("good_c"), dir.path(), "good_c.so", 3072);
  NoteReadResult r = read_plugin_note(copy);
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, HasSubstr("truncated: segment "));
  EXPECT_THAT(r.error, HasSubstr("but the file has 3072 bytes — was the copy interrupted?"));
}

TEST(ElfNote, RejectsHalfCopiedFile) {
  TempDir dir;
  // Half of what dlopen maps (debug sections past it would hide the cut in a Debug build).
  std::size_t half = loadable_end(read_file(fixture_plugin("good_cxx"))) / 2;
  fs::path copy = truncated_copy(fixture_plugin("good_cxx"), dir.path(), "good_cxx.so", half);
  EXPECT_THAT(read_plugin_note(copy).error, HasSubstr("truncated: segment"));
}

TEST(ElfNote, RejectsFileOneByteShortOfItsLastSegment) {
  TempDir dir;
  std::size_t end = loadable_end(read_file(fixture_plugin("good_c")));
  fs::path copy = truncated_copy(fixture_plugin("good_c"), dir.path(), "good_c.so", end - 1);
  EXPECT_THAT(read_plugin_note(copy).error,
              HasSubstr("ends at byte " + std::to_string(end) + " but the file has " +
                        std::to_string(end - 1) + " bytes"));
  copy = truncated_copy(fixture_plugin("good_c"), dir.path(), "good_c.so", end);
  EXPECT_TRUE(read_plugin_note(copy).metadata) << "sections after the segments are not needed";
}

TEST(ElfNote, RejectsTruncatedProgramHeaderTable) {
  TempDir dir;
  fs::path copy = truncated_copy(fixture_plugin("good_c"), dir.path(), "good_c.so", 100);
  NoteReadResult r = read_plugin_note(copy);
  EXPECT_THAT(r.error, HasSubstr("truncated: the program header table ends at byte"));
  EXPECT_THAT(r.error, HasSubstr("the file has 100 bytes"));
}

TEST(ElfNote, RejectsTruncatedElfHeader) {
  TempDir dir;
  fs::path copy = truncated_copy(fixture_plugin("good_c"), dir.path(), "good_c.so", 40);
  EXPECT_THAT(read_plugin_note(copy).error, HasSubstr("truncated: the ELF header"));
}

TEST(ElfNote, RejectsLibraryWithoutNote) {
  TempDir dir;
  fs::path copy = copy_plugin(fixture_plugin("no_note"), dir.path());
  NoteReadResult r = read_plugin_note(copy);
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, HasSubstr("no hookhost metadata note: not a hookhost plugin"));
  EXPECT_THAT(r.error, HasSubstr("HH_PLUGIN_DEFINE / HOOKHOST_PLUGIN"));
}

TEST(ElfNote, RejectsHugeFileWithoutReadingIt) {
  TempDir dir;
  fs::path big = dir / "big.so";
  write_file(big,
             "\x7f"
             "ELF");
  fs::resize_file(big, std::uintmax_t{513} << 20);  // sparse: costs no disk
  EXPECT_THAT(read_plugin_note(big).error, HasSubstr("too large"));
}

TEST(ElfNote, RejectsCorruptedNoteFormatInFile) {
  TempDir dir;
  fs::path copy = copy_plugin(fixture_plugin("good_c"), dir.path());
  std::size_t note = find_hookhost_note(read_file(copy));
  patch_file<uint32_t>(copy, note + 24, 7);  // the descriptor's format field
  NoteReadResult r = read_plugin_note(copy);
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, HasSubstr("malformed hookhost note: unknown note format 7"));
}

TEST(ElfNote, RejectsNoteSizeRunningPastSegment) {
  TempDir dir;
  fs::path copy = copy_plugin(fixture_plugin("good_c"), dir.path());
  std::size_t note = find_hookhost_note(read_file(copy));
  patch_file<uint32_t>(copy, note + 4, 0x7fff0000u);  // n_descsz
  NoteReadResult r = read_plugin_note(copy);
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, HasSubstr("sizes that run past their segment"));
}

// ---- Descriptor parsing -----------------------------------------------------------------------

TEST(ElfNoteDescriptor, ParsesWellFormedText) {
  NoteReadResult r = parse_note_descriptor(descriptor(
      HH_NOTE_FORMAT, 1, 0,
      "id=my.plugin-1\nversion=2.0\ndescription=Does things\n"
      "param=limit\tINT\tDEFAULT\t3\ta limit\nparam=names\tSTRING_LIST\tREQUIRED\t\tthe names\n"));
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->id, "my.plugin-1");
  EXPECT_EQ(r.metadata->version, "2.0");
  EXPECT_EQ(r.metadata->description, "Does things");
  ASSERT_EQ(r.metadata->params.size(), 2u);
  EXPECT_EQ(r.metadata->params[0],
            param("limit", HH_PARAM_TYPE_INT, ParamFlag::defaulted, "3", "a limit"));
  EXPECT_EQ(r.metadata->params[1],
            param("names", HH_PARAM_TYPE_STRING_LIST, ParamFlag::required, "", "the names"));
  EXPECT_THAT(r.error, IsEmpty());
}

TEST(ElfNoteDescriptor, DropsDefaultUnlessFlagIsDefault) {
  NoteReadResult r = parse_note_descriptor(descriptor(
      HH_NOTE_FORMAT, 1, 0, std::string(kGoodHeader) + "param=a\tBOOL\tREQUIRED\ttrue\thelp\n"));
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->params.at(0).default_value, "");
}

TEST(ElfNoteDescriptor, IgnoresUnknownKeys) {
  NoteReadResult r = parse_note_descriptor(
      descriptor(HH_NOTE_FORMAT, 1, 0, std::string(kGoodHeader) + "homepage=example.org\n"));
  EXPECT_TRUE(r.metadata) << r.error;
}

TEST(ElfNoteDescriptor, ReadsThePlacementAndTakesAllWhenThereIsNone) {
  for (const auto& [line, expected] :
       {std::pair{"placement=chief\n", Placement::chief}, {"placement=all\n", Placement::all}}) {
    NoteReadResult r =
        parse_note_descriptor(descriptor(HH_NOTE_FORMAT, 1, 1, std::string(kGoodHeader) + line));
    ASSERT_TRUE(r.metadata) << r.error;
    ASSERT_TRUE(r.metadata->placement) << line;
    EXPECT_EQ(*r.metadata->placement, expected) << line;
    EXPECT_EQ(r.metadata->default_placement(), expected) << line;
  }
  // A 1.0 note has no placement line: every rank.
  NoteReadResult r = parse_note_descriptor(descriptor(HH_NOTE_FORMAT, 1, 0, kGoodHeader));
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_FALSE(r.metadata->placement);
  EXPECT_EQ(r.metadata->default_placement(), Placement::all);
}

TEST(ElfNoteDescriptor, RefusesAnUnknownOrRepeatedPlacement) {
  for (const std::string value : {"everywhere", "", "Chief", "chief ", "0", "chief,all"}) {
    const std::string error = note_error(std::string(kGoodHeader) + "placement=" + value + "\n");
    EXPECT_THAT(error, AllOf(HasSubstr("line 4"), HasSubstr("placement=" + value + ","),
                             HasSubstr("'chief'"), HasSubstr("'all'"), HasSubstr("rebuild")))
        << value;
  }
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "placement=chief\nplacement=all\n"),
              HasSubstr("more than one placement line"));
}

TEST(ElfNoteDescriptor, ReadsTheObserverModeAndRefusesAnyOther) {
  NoteReadResult r = parse_note_descriptor(
      descriptor(HH_NOTE_FORMAT, 1, 3, std::string(kGoodHeader) + "mode=observe\n"));
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_TRUE(r.metadata->observes);
  for (const std::string value : {"step", "", "Observe", "observe ", "observe,step"}) {
    const std::string error = note_error(std::string(kGoodHeader) + "mode=" + value + "\n");
    EXPECT_THAT(error, AllOf(HasSubstr("line 4"), HasSubstr("mode=" + value + ","),
                             HasSubstr("'observe'"), HasSubstr("rebuild")))
        << value;
  }
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "mode=observe\nmode=observe\n"),
              HasSubstr("more than one mode line"));
}

// cadence.every_n_steps names an INT parameter of the plugin (ABI 1.4); anything else is refused
// with the line, the name and what to fix.
TEST(ElfNoteDescriptor, ReadsADeclaredCadenceAndRefusesOneNotNamingAnIntParameter) {
  const std::string params =
      "param=every\tINT\tDEFAULT\t10\thow often\nparam=path\tSTRING\tOPTIONAL\t\twhere\n";
  NoteReadResult r = parse_note_descriptor(descriptor(
      HH_NOTE_FORMAT, 1, 4, std::string(kGoodHeader) + params + "cadence.every_n_steps=every\n"));
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->cadence_param, "every");
  EXPECT_THAT(note_error(std::string(kGoodHeader) + params + "cadence.every_n_steps=path\n"),
              AllOf(HasSubstr("line 6"), HasSubstr("cadence.every_n_steps=path"),
                    HasSubstr("is a string, not an integer"), HasSubstr("rebuild")));
  EXPECT_THAT(note_error(std::string(kGoodHeader) + params + "cadence.every_n_steps=often\n"),
              AllOf(HasSubstr("declares no parameter of that name"),
                    HasSubstr("HH_CADENCE_EVERY_N_STEPS")));
  EXPECT_THAT(note_error(std::string(kGoodHeader) + params +
                         "cadence.every_n_steps=every\ncadence.every_n_steps=every\n"),
              HasSubstr("more than one cadence line"));
  // The built-in history_saver declares its every_n_steps with the macro.
  NoteReadResult history = read_plugin_note(builtin_plugin("history_saver"));
  ASSERT_TRUE(history.metadata) << history.error;
  EXPECT_EQ(history.metadata->cadence_param, "every_n_steps");
}

TEST(ElfNote, ReadsThePlacementTheSdkMacrosWrite) {
  struct Expected {
    fs::path file;
    std::optional<Placement> placement;
  };
  const std::vector<Expected> cases = {
      {fixture_plugin("placed_chief"), Placement::chief},  // HOOKHOST_PLUGIN(..., chief)
      {fixture_plugin("placed_c_all"), Placement::all},    // HH_PLUGIN_DEFINE(..., all), C99
      {fixture_plugin("placed_default"), std::nullopt},    // no declaration
      {fixture_plugin("frozen_v1_0_c"), std::nullopt},     // the 1.0 headers know no placement
      {fixture_plugin("frozen_v1_0_cxx"), std::nullopt},
      {builtin_plugin("checkpoint_saver"), Placement::chief},
      {builtin_plugin("summary_saver"), Placement::chief},
      {builtin_plugin("history_saver"), Placement::chief},
      {builtin_plugin("step_counter"), Placement::chief},
      {builtin_plugin("progress_bar"), Placement::chief},
      {builtin_plugin("logging_tensor"), Placement::chief},
      {builtin_plugin("stop_at_step"), std::nullopt},
      {builtin_plugin("nan_tensor"), std::nullopt},
      {builtin_plugin("global_step_waiter"), std::nullopt}};
  for (const Expected& c : cases) {
    NoteReadResult r = read_plugin_note(c.file);
    ASSERT_TRUE(r.metadata) << c.file << ": " << r.error;
    EXPECT_EQ(r.metadata->placement, c.placement) << c.file;
  }
}

TEST(ElfNote, RefusesAFileWhoseNoteDeclaresAnUnknownPlacement) {
  NoteReadResult r = read_plugin_note(fixture_plugin("bad_placement"));
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, AllOf(HasSubstr("line 4 says placement=everywhere"), HasSubstr("'chief'"),
                             HasSubstr("'all'")));
}

// ---- needs.* lines (ABI 1.2) ----------------------------------------------------------------
// PluginNeeds{read, write, read_params, write_params, network, processes} below.

constexpr const char* kNeedsParams =
    "param=script\tSTRING\tOPTIONAL\t\tthe script\n"
    "param=inputs\tSTRING_LIST\tDEFAULT\ta.txt,b.txt\tfiles to read\n"
    "param=every\tINT\tDEFAULT\t1\thow often\n"
    "param=ratio\tFLOAT\tOPTIONAL\t\ta ratio\n"
    "param=verbose\tBOOL\tDEFAULT\tfalse\tlog more\n";

NoteReadResult needs_note(const std::string& needs_lines) {
  return parse_note_descriptor(
      descriptor(HH_NOTE_FORMAT, 1, 2, std::string(kGoodHeader) + kNeedsParams + needs_lines));
}

// The error for `needs_lines` after the header (3 lines) and kNeedsParams (5 lines).
std::string needs_error(const std::string& needs_lines) {
  NoteReadResult r = needs_note(needs_lines);
  EXPECT_FALSE(r.metadata) << "accepted: " << needs_lines;
  return r.error;
}

TEST(ElfNoteDescriptor, ReadsEveryNeedsKeyInNoteOrderWithRepeats) {
  NoteReadResult r = needs_note(
      "needs.read=/usr/share/dict\n"
      "needs.write=exports\n"
      "needs.read=vocab/words.txt\n"
      "needs.read.param=script\n"
      "needs.write.param=inputs\n"
      "needs.read.param=inputs\n"
      "needs.write=/tmp/out.csv\n"
      "needs.read=./here\n"
      "needs.network=1\n"
      "needs.processes=1\n");
  ASSERT_TRUE(r.metadata) << r.error;
  const PluginNeeds& n = r.metadata->needs;
  EXPECT_EQ(n.read, (std::vector<std::string>{"/usr/share/dict", "vocab/words.txt", "./here"}));
  EXPECT_EQ(n.write, (std::vector<std::string>{"exports", "/tmp/out.csv"}));
  EXPECT_EQ(n.read_params, (std::vector<std::string>{"script", "inputs"}));
  EXPECT_EQ(n.write_params, (std::vector<std::string>{"inputs"}));
  EXPECT_TRUE(n.network);
  EXPECT_TRUE(n.processes);
  EXPECT_FALSE(n.empty());
}

TEST(ElfNoteDescriptor, ANoteWithoutNeedsNeedsNothingAndEachFlagStandsAlone) {
  NoteReadResult none = needs_note("");
  ASSERT_TRUE(none.metadata) << none.error;
  EXPECT_TRUE(none.metadata->needs.empty());

  NoteReadResult network = needs_note("needs.network=1\n");
  ASSERT_TRUE(network.metadata) << network.error;
  EXPECT_EQ(network.metadata->needs, (PluginNeeds{{}, {}, {}, {}, true, false}));
  NoteReadResult processes = needs_note("needs.processes=1\n");
  ASSERT_TRUE(processes.metadata) << processes.error;
  EXPECT_EQ(processes.metadata->needs, (PluginNeeds{{}, {}, {}, {}, false, true}));
}

TEST(ElfNoteDescriptor, SkipsNeedsKeysALaterMinorMayAdd) {
  NoteReadResult r = needs_note(
      "needs.gpu=1\nneeds.read.glob=*.txt\nneeds.=x\nneeds.networks=2\nneeds.read=kept\n");
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->needs, (PluginNeeds{{"kept"}, {}, {}, {}, false, false}));
}

TEST(ElfNoteDescriptor, RefusesABadNeedsPathNamingTheLine) {
  struct Case {
    std::string line;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"needs.read=", "the path is empty"},
      {"needs.write=", "the path is empty"},
      {"needs.read=..", "'..' component"},
      {"needs.read=../secrets", "'..' component"},
      {"needs.write=out/../../etc", "'..' component"},
      {"needs.write=/var/..", "'..' component"},
      {"needs.read=/a/../b", "'..' component"},
  };
  for (const Case& c : cases) {
    const std::string error = needs_error(c.line + "\n");
    EXPECT_THAT(error, AllOf(HasSubstr("bad needs in the hookhost note"), HasSubstr("line 9 ("),
                             HasSubstr(c.says), HasSubstr("HH_PLUGIN_NEEDS"), HasSubstr("rebuild")))
        << c.line;
  }
  // Dots that are not a ".." component are names like any other.
  NoteReadResult r = needs_note("needs.read=..hidden\nneeds.read=a..b/c..\nneeds.write=./.\n");
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->needs.read, (std::vector<std::string>{"..hidden", "a..b/c.."}));
}

TEST(ElfNoteDescriptor, TakesAPathOfTheLongestLengthAndRefusesOneByteMore) {
  const std::string longest = "/" + std::string(4094, 'p');
  NoteReadResult r = needs_note("needs.write=" + longest + "\nneeds.read=" + longest + "\n");
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->needs.write, std::vector<std::string>{longest});
  EXPECT_EQ(r.metadata->needs.read, std::vector<std::string>{longest});
  EXPECT_THAT(needs_error("needs.read=" + longest + "p\n"),
              AllOf(HasSubstr("line 9"), HasSubstr("4096 bytes, longer than the 4095")));
}

TEST(ElfNoteDescriptor, RefusesAPathCutByANulByte) {
  // The text ends at the first NUL; what the macro wrote after it is not padding.
  const std::string text =
      std::string(kGoodHeader) + "needs.read=in" + std::string(1, '\0') + "put\nneeds.network=1\n";
  NoteReadResult r = parse_note_descriptor(descriptor(HH_NOTE_FORMAT, 1, 2, text));
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, AllOf(HasSubstr("line 4 (needs.read=in...)"), HasSubstr("NUL byte")));
  r = parse_note_descriptor(descriptor(
      HH_NOTE_FORMAT, 1, 2, std::string(kGoodHeader) + "needs.processes=1" + '\0' + "x\n"));
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, AllOf(HasSubstr("line 4 (needs.processes=1...)"),
                             HasSubstr("a NUL byte cuts the line short")));
  // A NUL that ends the text, followed only by padding, is the terminator.
  r = parse_note_descriptor(descriptor(
      HH_NOTE_FORMAT, 1, 2, std::string(kGoodHeader) + "needs.read=in\n" + std::string(3, '\0')));
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->needs.read, std::vector<std::string>{"in"});
}

TEST(ElfNoteDescriptor, RefusesAParamNeedNamingNoStringParameter) {
  for (const std::string key : {"needs.read.param", "needs.write.param"}) {
    EXPECT_THAT(needs_error(key + "=nope\n"),
                AllOf(HasSubstr("line 9 (" + key + "=nope)"),
                      HasSubstr("'nope' is not a parameter of the plugin")));
    EXPECT_THAT(needs_error(key + "=\n"), HasSubstr("the parameter name is empty"));
    for (const auto& [name, type] :
         {std::pair{"every", "int"}, {"ratio", "float"}, {"verbose", "bool"}}) {
      EXPECT_THAT(needs_error(key + "=" + name + "\n"),
                  AllOf(HasSubstr("line 9"), HasSubstr(std::string("parameter '") + name +
                                                       "' is a " + type + ", not a string")))
          << key << " " << name;
    }
  }
  // A hand-written note may name the parameter before declaring it.
  NoteReadResult r = parse_note_descriptor(descriptor(
      HH_NOTE_FORMAT, 1, 2,
      std::string(kGoodHeader) + "needs.write.param=out\nparam=out\tSTRING\tOPTIONAL\t\tout\n"));
  ASSERT_TRUE(r.metadata) << r.error;
  EXPECT_EQ(r.metadata->needs.write_params, std::vector<std::string>{"out"});
}

TEST(ElfNoteDescriptor, RefusesASecondNetworkOrProcessesLineAndAnyValueButOne) {
  for (const std::string key : {"needs.network", "needs.processes"}) {
    EXPECT_THAT(needs_error(key + "=1\n" + key + "=1\n"),
                AllOf(HasSubstr("line 10"), HasSubstr("a second " + key + " line")));
    for (const std::string value : {"0", "", "true", "yes", "1 ", " 1", "01", "2"}) {
      EXPECT_THAT(needs_error(key + "=" + value + "\n"),
                  AllOf(HasSubstr("line 9 (" + key + "=" + value + ")"),
                        HasSubstr("the value must be exactly 1")))
          << key << "=" << value;
    }
  }
}

TEST(ElfNote, ReadsTheNeedsTheMacrosWriteFromCAndFromTheCxxSdk) {
  NoteReadResult c = read_plugin_note(fixture_plugin("frozen_v1_2_c"));  // HH_PLUGIN_DEFINE, C99
  ASSERT_TRUE(c.metadata) << c.error;
  EXPECT_EQ(c.metadata->abi_minor, 2u);
  EXPECT_EQ(c.metadata->needs, (PluginNeeds{{"vocab/words.txt", "/usr/share/dict"},
                                            {"exports"},
                                            {"inputs"},
                                            {"trace"},
                                            true,
                                            false}));
  NoteReadResult cxx = read_plugin_note(fixture_plugin("frozen_v1_2_cxx"));  // HOOKHOST_PLUGIN
  ASSERT_TRUE(cxx.metadata) << cxx.error;
  EXPECT_EQ(cxx.metadata->needs, (PluginNeeds{{}, {}, {"model"}, {"trace"}, false, true}));
  NoteReadResult hand = read_plugin_note(fixture_plugin("needs_hand_note"));  // HH_PLUGIN_NOTE
  ASSERT_TRUE(hand.metadata) << hand.error;
  EXPECT_EQ(hand.metadata->needs, (PluginNeeds{{}, {"exports/"}, {"models"}, {}, false, true}));
  // Headers from before 1.2 write none.
  for (const char* id : {"frozen_v1_0_c", "frozen_v1_1_cxx", "good_c"}) {
    NoteReadResult r = read_plugin_note(fixture_plugin(id));
    ASSERT_TRUE(r.metadata) << id << ": " << r.error;
    EXPECT_TRUE(r.metadata->needs.empty()) << id;
  }
}

TEST(ElfNote, ReadsTheObserverModeTheMacroWritesFromCAndFromTheCxxSdk) {
  for (const char* id : {"frozen_v1_3_c", "frozen_v1_3_cxx"}) {
    NoteReadResult r = read_plugin_note(fixture_plugin(id));
    ASSERT_TRUE(r.metadata) << id << ": " << r.error;
    EXPECT_EQ(r.metadata->abi_minor, 3u) << id;
    EXPECT_TRUE(r.metadata->observes) << id;
    EXPECT_FALSE(r.metadata->needs.empty()) << id;  // the lines before it are still read
  }
  // Headers from before 1.3 write no mode line, and neither do plugins that do not set it.
  for (const char* id : {"frozen_v1_0_c", "frozen_v1_2_c", "frozen_v1_2_cxx", "good_c"}) {
    NoteReadResult r = read_plugin_note(fixture_plugin(id));
    ASSERT_TRUE(r.metadata) << id << ": " << r.error;
    EXPECT_FALSE(r.metadata->observes) << id;
  }
}

TEST(ElfNote, RefusesAFileWhoseNeedsPathHoldsANulByte) {
  NoteReadResult r = read_plugin_note(fixture_plugin("needs_nul_path"));
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, AllOf(HasSubstr("(needs.read=in...)"), HasSubstr("NUL byte")));
}

TEST(ElfNote, EveryBuiltInDeclaresWhatItTouchesItself) {
  const std::vector<std::pair<std::string, PluginNeeds>> cases = {
      {"history_saver", {{}, {}, {}, {"path"}, false, false}},
      {"lifecycle_trace", {{}, {}, {}, {"path"}, false, false}},
      {"time_limit", {{}, {}, {"stop_file"}, {}, false, false}},
      // checkpoints and summaries are written by the host's services
      {"checkpoint_saver", {}},
      {"summary_saver", {}},
      {"step_counter", {}},
      {"early_stopping", {}},
      {"global_step_waiter", {}},
      {"logging_tensor", {}},
      {"loss_threshold", {}},
      {"nan_tensor", {}},
      {"progress_bar", {}},
      {"stop_at_step", {}}};
  for (const auto& [id, needs] : cases) {
    NoteReadResult r = read_plugin_note(builtin_plugin(id));
    ASSERT_TRUE(r.metadata) << id << ": " << r.error;
    EXPECT_EQ(r.metadata->needs, needs) << id;
  }
  if (!fs::exists(builtin_plugin("python_hook"))) GTEST_SKIP() << "python_hook is not built";
  NoteReadResult py = read_plugin_note(builtin_plugin("python_hook"));
  ASSERT_TRUE(py.metadata) << py.error;
  EXPECT_EQ(py.metadata->needs,
            (PluginNeeds{{"/etc/ssl/certs"}, {}, {"script", "python_path"}, {}, false, false}));
}

TEST(ElfNoteDescriptor, RejectsShortDescriptor) {
  std::vector<std::byte> d = descriptor(HH_NOTE_FORMAT, 1, 0, "");
  NoteReadResult r = parse_note_descriptor(std::span(d).first(8));
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, HasSubstr("shorter than its 20-byte header"));
}

TEST(ElfNoteDescriptor, RejectsUnknownFormat) {
  NoteReadResult r = parse_note_descriptor(descriptor(99, 1, 0, kGoodHeader));
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, HasSubstr("unknown note format 99"));
}

TEST(ElfNoteDescriptor, RejectsTextWithoutNul) {
  NoteReadResult r = parse_note_descriptor(descriptor(HH_NOTE_FORMAT, 1, 0, kGoodHeader, false));
  EXPECT_FALSE(r.metadata);
  EXPECT_THAT(r.error, HasSubstr("not NUL-terminated"));
}

TEST(ElfNoteDescriptor, RejectsMissingIdOrVersion) {
  EXPECT_THAT(note_error("version=1\ndescription=d\n"), HasSubstr("no id= line"));
  EXPECT_THAT(note_error("id=x\ndescription=d\n"), HasSubstr("no version= line"));
  EXPECT_THAT(note_error("id=x\nversion=1\n"), HasSubstr("no description= line"));
  EXPECT_THAT(note_error(""), HasSubstr("no id= line"));
}

TEST(ElfNoteDescriptor, RejectsBadOrRepeatedId) {
  EXPECT_THAT(note_error("id=Bad Id\nversion=1\ndescription=d\n"),
              HasSubstr("id 'Bad Id' is not [a-z0-9_.-]+"));
  EXPECT_THAT(note_error("id=\nversion=1\ndescription=d\n"), HasSubstr("empty id"));
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "id=y\n"), HasSubstr("more than one id"));
}

TEST(ElfNoteDescriptor, RejectsUnknownParamTypeOrFlag) {
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "param=a\tDOUBLE\tDEFAULT\t1\th\n"),
              HasSubstr("unknown param TYPE 'DOUBLE'"));
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "param=a\tINT\tMAYBE\t1\th\n"),
              HasSubstr("unknown param FLAG 'MAYBE'"));
}

TEST(ElfNoteDescriptor, RejectsParamLineWithWrongFieldCount) {
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "param=a\tINT\tDEFAULT\t1\n"),
              HasSubstr("has 4 tab-separated fields, expected 5"));
  // Fields after the fifth belong to a later minor and are skipped.
  NoteReadResult longer = parse_note_descriptor(descriptor(
      HH_NOTE_FORMAT, 1, 0, std::string(kGoodHeader) + "param=a\tINT\tDEFAULT\t1\th\textra\n"));
  ASSERT_TRUE(longer.metadata) << longer.error;
  EXPECT_EQ(longer.metadata->params.at(0).help, "h");
}

TEST(ElfNoteDescriptor, RejectsBadOrRepeatedParamName) {
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "param=A-b\tINT\tOPTIONAL\t\th\n"),
              HasSubstr("param name 'A-b' is not [a-z0-9_]+"));
  EXPECT_THAT(note_error(std::string(kGoodHeader) +
                         "param=a\tINT\tOPTIONAL\t\th\nparam=a\tBOOL\tOPTIONAL\t\th\n"),
              HasSubstr("param 'a' is declared twice"));
}

TEST(ElfNoteDescriptor, RejectsLineWithoutKey) {
  EXPECT_THAT(note_error(std::string(kGoodHeader) + "garbage\n"), HasSubstr("is not key=value"));
}

TEST(ElfNoteDescriptor, EscapesUnprintableBytesInMessages) {
  std::string error = note_error(std::string(kGoodHeader) + "param=a\t\x01\xff\tOPTIONAL\t\th\n");
  EXPECT_THAT(error, HasSubstr("'\\x01\\xff'"));
}

TEST(ElfNoteDescriptor, SurvivesRandomDescriptors) {
  std::mt19937 rng(20240601);
  for (int i = 0; i < 500; ++i) {
    std::vector<std::byte> d = descriptor(HH_NOTE_FORMAT, 1, 0,
                                          "id=x\nversion=1\ndescription=d\nparam=a\tINT\tDEFAULT"
                                          "\t3\th\n");
    for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips) {
      d[rng() % d.size()] = static_cast<std::byte>(rng());
    }
    d.resize(rng() % (d.size() + 1));
    NoteReadResult r = parse_note_descriptor(d);
    EXPECT_TRUE(r.metadata.has_value() != !r.error.empty()) << "iteration " << i;
  }
}

// ---- Robustness against damaged files -----------------------------------------------------------

TEST(ElfNote, SurvivesRandomByteFlips) {
  const std::string original = read_file(fixture_plugin("good_c"));
  const std::size_t note = find_hookhost_note(original);
  TempDir dir;
  std::mt19937 rng(12345);
  int rejected = 0;
  for (int i = 0; i < 200; ++i) {
    std::string bytes = original;
    for (int flips = 1 + static_cast<int>(rng() % 8); flips > 0; --flips) {
      // Aim at what the reader interprets: the ELF and program headers, the note, and anywhere.
      std::size_t at;
      switch (rng() % 3) {
        case 0: at = rng() % std::min<std::size_t>(bytes.size(), 1024); break;
        case 1: at = note + rng() % std::min<std::size_t>(bytes.size() - note, 512); break;
        default: at = rng() % bytes.size(); break;
      }
      bytes[at] = static_cast<char>(bytes[at] ^ (1u << (rng() % 8)));
    }
    fs::path file = dir / ("mutant" + std::to_string(i) + ".so");
    write_file(file, bytes);
    NoteReadResult r = read_plugin_note(file);
    EXPECT_TRUE(r.metadata.has_value() != !r.error.empty()) << "mutation " << i;
    if (!r.metadata) ++rejected;
    fs::remove(file);
  }
  EXPECT_GT(rejected, 0);  // the mutations did reach something the reader checks
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
