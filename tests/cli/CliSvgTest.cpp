// `--svg FILE` on ftsim check, replay and repro as a user runs them: the slides' torn fetch drawn,
// rendered to PNG by rsvg-convert (not blank: far larger than an empty picture of the same size
// rendered the same way), the torn bytes and their decoding in it, the same bytes every time and
// from every command; bad output paths refused before any work, nothing written without a
// counterexample.

#include "FtsimRun.h"
#include "TempDir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ftsim::test {
namespace {

namespace fs = std::filesystem;

const std::string kTorn = std::string(FTSIM_CORPORA_DIR) + "/scenarios/torn-nop-to-call.toml";
// The slides' bytes: the site across a cache line (offset 62), the call's first two bytes one
// store and its last three another, CPU 1 reading the first line before the stores and the second
// after them (byte stores and stale fetch tear the site too, into other bytes).
const std::string kSlides = " --fetch line --store word --site-offset 62";

std::string slurp(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has(const std::string &text, const std::string &what) {
  return text.find(what) != std::string::npos;
}

// rsvg-convert SVG -> PNG; the PNG's size in bytes (0 when it failed).
std::uintmax_t renderPng(const fs::path &svg, const fs::path &png) {
  const std::string cmd = std::string("'") + FTSIM_RSVG_CONVERT + "' -f png -o '" + png.string() +
                          "' '" + svg.string() + "'";
  if (std::system(cmd.c_str()) != 0 || !fs::exists(png))
    return 0;
  const std::string bytes = slurp(png);
  EXPECT_EQ(bytes.substr(0, 4), "\x89PNG") << png;
  return fs::file_size(png);
}

TEST(CliSvg, TheSlidesTornFetchIsDrawnRenderedAndTheSameEveryTime) {
  const ftsim::test::TempDir dirTemp;
  const std::filesystem::path &dir = dirTemp.path();
  const CommandRun r = runFtsim(
      "check --scenario " + kTorn + kSlides + " --quiet --cex a.json --svg a.svg", dir.string());
  ASSERT_EQ(r.status, 1) << r.out;
  ASSERT_TRUE(has(r.out, "0f 1f 2e 00 00")) << r.out; // the torn fetch of the slides
  const std::string svg = slurp(dir / "a.svg");
  ASSERT_FALSE(svg.empty()) << r.out;
  EXPECT_TRUE(has(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"")) << svg;
  // The violation: its bytes and Capstone's decoding, the oracle's message, the title's models.
  EXPECT_TRUE(has(svg, "bytes 0f 1f 2e 00 00 = nopl (%rsi); addb %al, (%rax)")) << svg;
  EXPECT_TRUE(has(svg, "VIOLATION torn-fetch cpu1,cpu0 site0")) << svg;
  EXPECT_TRUE(has(svg, "none of its 2 allowed states")) << svg;
  EXPECT_TRUE(has(svg, "store word, fetch line")) << svg;
  EXPECT_TRUE(has(svg, "x86_64 direct")) << svg;
  EXPECT_TRUE(has(svg, "fidelity: teaching-strawman")) << svg;
  EXPECT_TRUE(has(svg, "linux: ")) << svg;
  // cpu1's view holds the nop's stale first bytes (marked) over the call's third byte.
  EXPECT_TRUE(has(svg, ">2e</text>")) << svg;
  EXPECT_TRUE(has(svg, "#ffd98a")) << svg;             // stale cells
  EXPECT_TRUE(has(svg, "elided")) << svg;              // the caption counts the elided events
  EXPECT_TRUE(has(svg, "patcher store")) << svg;       // the stores on the patcher's lane
  EXPECT_TRUE(has(svg, "cpu0 (patcher)")) << svg;      //
  EXPECT_TRUE(has(svg, "cache-line boundary")) << svg; // the site straddles two lines
  EXPECT_TRUE(has(svg, "cpu1 task0 step site0 fetch site0 [0f 1f 2e 00 00]")) << svg; // the list

  // Byte-identical across runs, and from replay of the written counterexample.
  const CommandRun again = runFtsim(
      "check --scenario " + kTorn + kSlides + " --quiet --cex b.json --svg b.svg", dir.string());
  ASSERT_EQ(again.status, 1) << again.out;
  EXPECT_EQ(slurp(dir / "b.svg"), svg);
  const CommandRun replay = runFtsim("replay a.json --svg c.svg", dir.string());
  ASSERT_EQ(replay.status, 1) << replay.out;
  EXPECT_TRUE(has(replay.out, "svg: c.svg")) << replay.out;
  EXPECT_EQ(slurp(dir / "c.svg"), svg);

  // Rendered: valid SVG, and not blank.
  const std::uintmax_t real = renderPng(dir / "a.svg", dir / "a.png");
  // The picture's size, from its root element: width="W" height="H".
  auto attribute = [&](const std::string &name) {
    const std::size_t at = svg.find(" " + name + "=\"", svg.find("<svg "));
    return svg.substr(at + name.size() + 3,
                      svg.find('"', at + name.size() + 3) - at - name.size() - 3);
  };
  const std::string w = attribute("width"), h = attribute("height");
  ASSERT_GT(std::stoi(w), 500) << w;
  ASSERT_GT(std::stoi(h), 300) << h;
  std::ofstream(dir / "empty.svg")
      << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
      << "\"><rect width=\"" << w << "\" height=\"" << h << "\" fill=\"#ffffff\"/></svg>\n";
  const std::uintmax_t empty = renderPng(dir / "empty.svg", dir / "empty.png");
  ASSERT_GT(empty, 0u);
  EXPECT_GT(real, 10 * empty) << "PNG of the picture " << real << " bytes, of an empty one "
                              << empty;
}

TEST(CliSvg, ReproDrawsTheBuggyVariantOfOneNameAsCheckDoes) {
  const ftsim::test::TempDir dirTemp;
  const std::filesystem::path &dir = dirTemp.path();
  const CommandRun r = runFtsim("repro torn-nop-to-call --quiet --svg r.svg", dir.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "svg: r.svg (the counterexample of torn-nop-to-call)")) << r.out;
  const std::string svg = slurp(dir / "r.svg");
  EXPECT_TRUE(has(svg, "VIOLATION torn-fetch cpu1,cpu0 site0")) << svg;
  // The buggy variant's file checked as it is: the same counterexample, the same picture.
  const CommandRun check =
      runFtsim("check --scenario " + kTorn + " --quiet --cex c.json --svg c.svg", dir.string());
  ASSERT_EQ(check.status, 1) << check.out;
  EXPECT_EQ(slurp(dir / "c.svg"), svg);
  const CommandRun all = runFtsim("repro --all --svg all.svg", dir.string());
  EXPECT_EQ(all.status, 2) << all.out;
  EXPECT_EQ(countLines(all.out), 1u) << all.out;
  EXPECT_TRUE(has(all.out, "--svg all.svg")) << all.out;
  EXPECT_FALSE(fs::exists(dir / "all.svg"));
}

TEST(CliSvg, BadPathsAreRefusedFirstAndNothingIsWrittenWithoutACounterexample) {
  const ftsim::test::TempDir dirTemp;
  const std::filesystem::path &dir = dirTemp.path();
  for (const std::string &args :
       {"check --scenario " + kTorn + " --quiet --svg /nonexistent/dir/x.svg",
        std::string("replay ftsim-cex.json --svg /nonexistent/dir/x.svg"),
        "repro torn-nop-to-call --svg " + dir.string()}) {
    const CommandRun r = runFtsim(args, dir.string());
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_EQ(countLines(r.out), 1u) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "--svg")) << args << "\n" << r.out;
  }
  EXPECT_TRUE(fs::is_empty(dir)); // the check was refused before it wrote a replay file
  const std::string fixed =
      std::string(FTSIM_CORPORA_DIR) + "/scenarios/torn-nop-to-call-fixed.toml";
  const CommandRun ok =
      runFtsim("check --scenario " + fixed + " --quiet --svg f.svg", dir.string());
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_TRUE(has(ok.out, "--svg f.svg: no counterexample, nothing written")) << ok.out;
  EXPECT_TRUE(fs::is_empty(dir));
}

} // namespace
} // namespace ftsim::test
