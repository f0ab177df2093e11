// set_ftrace_filter / set_ftrace_notrace: ports of ftracetest's func-filter-glob.tc,
// func_set_ftrace_file.tc and func_traceonoff_triggers.tc (tools/testing/selftests/ftrace/
// test.d/ftrace/), asserting what the originals assert, plus the parser's corner cases.

#include "FakeKernel.h"

#include "ftsim/model/Glob.h"
#include "ftsim/model/TraceArray.h"
#include "ftsim/model/TraceFs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <regex>
#include <set>
#include <sstream>

namespace ftsim::model {
namespace {

using test::FakeKernel;

std::vector<FakeKernel::Function> kernelFunctions() {
  std::vector<FakeKernel::Function> functions =
      test::names({"schedule",         "__schedule",      "preempt_schedule_irq",
                   "schedule_timeout", "_cond_resched",   "yield",
                   "do_softirq",       "_raw_spin_lock",  "_raw_spin_trylock",
                   "_raw_spin_unlock", "spin_lock_irq",   "mutex_lock",
                   "mutex_trylock",    "mutex_unlock",    "mutex_lock_trylock_x",
                   "rcu_read_lock",    "rcu_read_unlock", "cgroup_unlock",
                   "clock_was_set",    "sys_read",        "SyS_write",
                   "sYs_open",         "put_page",        "vfs_setpos",
                   "default_llseek"});
  functions.push_back({"ext4_readpage", "ext4"});
  functions.push_back({"ext4_lock_inode", "ext4"});
  return functions;
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

class FilterTest : public ::testing::Test {
protected:
  FilterTest() : kernel("x86_64", kernelFunctions()) {
    core = test::bootedCore(kernel);
    tr = std::make_unique<TraceArray>(*core);
  }

  std::string read() { return tr->read(FilterFileKind::Filter); }
  void echo(std::string_view text) { tr->write(FilterFileKind::Filter, text, false); }
  void echoAppend(std::string_view text) { tr->write(FilterFileKind::Filter, text, true); }
  // `cut -f1 -d" " available_filter_functions | grep "$2"`
  std::vector<std::string> grepAvailable(const std::string &regex) {
    std::vector<std::string> out;
    for (const std::string &line : lines(core->availableFilterFunctions())) {
      const std::string name = line.substr(0, line.find(' '));
      if (std::regex_search(name, std::regex(regex)))
        out.push_back(name);
    }
    return out;
  }
  // `cut -f1 -d" " set_ftrace_filter`
  std::vector<std::string> filterNames() {
    std::vector<std::string> out;
    for (const std::string &line : lines(read()))
      out.push_back(line.substr(0, line.find(' ')));
    return out;
  }
  void fire(std::string_view name) {
    CallSite site{kernel.site(name), 0, nullptr, {}};
    core->invoke(core->traceFunction(), site);
  }

  FakeKernel kernel;
  std::unique_ptr<FtraceCore> core;
  std::unique_ptr<TraceArray> tr;
};

// func-filter-glob.tc: ftrace_filter_check GLOB REGEX
TEST_F(FilterTest, FuncFilterGlob) {
  const std::pair<const char *, const char *> cases[] = {
      {"*schedule", "^.*schedule$"},     {"*schedule*", "^.*schedule.*$"},
      {"schedule*", "^schedule.*$"},     {"*pin*lock", ".*pin.*lock$"},
      {"mutex*try*", "^mutex.*try.*"},   {"sch*ule", "^sch.*ule$"},
      {"[Ss]y[Ss]_*", "^[Ss]y[Ss]_.*$"},
  };
  for (const auto &[glob, regex] : cases) {
    echo(glob);
    const std::vector<std::string> expected = grepAvailable(regex);
    EXPECT_FALSE(expected.empty()) << glob;
    EXPECT_EQ(filterNames(), expected) << glob;
  }
  // filter by ?, schedule is always good
  echo("sch?dule");
  EXPECT_EQ(lines(read()), std::vector<std::string>{"schedule"});
  echo("");
  EXPECT_EQ(read(), "#### all functions enabled ####\n");
}

TEST_F(FilterTest, ParseFilterRegexMatchTypes) {
  EXPECT_EQ(parseFilterRegex("schedule").type, MatchType::Full);
  EXPECT_EQ(parseFilterRegex("sched*").type, MatchType::FrontOnly);
  EXPECT_EQ(parseFilterRegex("sched*").search, "sched");
  EXPECT_EQ(parseFilterRegex("*sched").type, MatchType::EndOnly);
  EXPECT_EQ(parseFilterRegex("*sched").search, "sched");
  EXPECT_EQ(parseFilterRegex("*sched*").type, MatchType::MiddleOnly);
  EXPECT_EQ(parseFilterRegex("*sched*").search, "sched");
  EXPECT_EQ(parseFilterRegex("s*d").type, MatchType::Glob);
  EXPECT_EQ(parseFilterRegex("s?d").type, MatchType::Glob);
  EXPECT_EQ(parseFilterRegex("[ab]").type, MatchType::Glob);
  EXPECT_EQ(parseFilterRegex("12").type, MatchType::Index);
  const FilterGlob removal = parseFilterRegex("!*lock");
  EXPECT_TRUE(removal.negate);
  EXPECT_EQ(removal.type, MatchType::EndOnly);
  EXPECT_TRUE(globMatch("[!a-c]x", "dx"));
  EXPECT_FALSE(globMatch("[!a-c]x", "bx"));
  EXPECT_TRUE(globMatch("[]]", "]"));
  EXPECT_TRUE(globMatch("a\\*b", "a*b"));
  EXPECT_FALSE(globMatch("a\\*b", "axb"));
  EXPECT_TRUE(globMatch("[ab", "[ab")); // unterminated class: literal, as lib/glob.c
}

// func_set_ftrace_file.tc
TEST_F(FilterTest, FuncSetFtraceFile) {
  const std::string allFuncs = "#### all functions enabled ####";
  auto check = [&](std::vector<std::string> expected) {
    std::vector<std::string> actual = lines(read());
    std::sort(actual.begin(), actual.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(actual, expected);
  };
  check({allFuncs});
  echo("schedule:traceoff");
  check({allFuncs, "schedule:traceoff:unlimited"});
  echo("schedule");
  check({"schedule", "schedule:traceoff:unlimited"});
  echoAppend("do_softirq");
  check({"schedule", "do_softirq", "schedule:traceoff:unlimited"});
  echoAppend("do_softirq:traceoff");
  check({"schedule", "do_softirq", "schedule:traceoff:unlimited", "do_softirq:traceoff:unlimited"});
  echo("schedule");
  check({"schedule", "schedule:traceoff:unlimited", "do_softirq:traceoff:unlimited"});
  echo("");
  check({allFuncs, "schedule:traceoff:unlimited", "do_softirq:traceoff:unlimited"});
  // reset_ftrace_filter: writes "!<each probe>" and truncates
  echoAppend("!*:traceoff");
  check({allFuncs});
  echo("schedule");
  check({"schedule"});
  echoAppend("do_softirq");
  check({"schedule", "do_softirq"});

  // test_actual: names of the probed functions (grep -v '#' | cut -d' ' -f1 | cut -d: -f1 | sort
  // -u)
  auto probed = [&] {
    std::set<std::string> out;
    for (const std::string &line : lines(read()))
      if (line.find('#') == std::string::npos)
        out.insert(line.substr(0, line.find_first_of(" :")));
    return out;
  };
  std::set<std::string> expected;
  for (const std::string &name : grepAvailable("lock"))
    expected.insert(name);
  echo("*lock*:traceoff");
  EXPECT_EQ(probed(), expected);
  std::erase_if(expected, [](const std::string &n) {
    return std::regex_search(n, std::regex("try.*lock$"));
  });
  echoAppend("!*try*lock:traceoff");
  EXPECT_EQ(probed(), expected);
  std::erase_if(expected,
                [](const std::string &n) { return std::regex_search(n, std::regex("^m.*lock$")); });
  echoAppend("!m*lock:traceoff");
  EXPECT_EQ(probed(), expected);
  std::erase_if(expected, [](const std::string &n) {
    return std::regex_search(n, std::regex("^c.*unlock"));
  });
  echoAppend("!c*unlock*:traceoff");
  EXPECT_EQ(probed(), expected);
  echoAppend("!*:traceoff");
  EXPECT_TRUE(probed().empty());
  EXPECT_EQ(tr->probeCount(), 0u);
  EXPECT_TRUE(core->opsList().empty()); // the probe ops went away with its last function
}

// func_traceonoff_triggers.tc, with the simulated calls of schedule standing in for `sleep`.
TEST_F(FilterTest, FuncTraceOnOffTriggers) {
  auto grepSchedule = [&] {
    int count = 0;
    for (const std::string &line : lines(read()))
      count += line.find("schedule") != std::string::npos;
    return count;
  };
  echo("schedule:traceoff");
  EXPECT_EQ(grepSchedule(), 1);
  fire("schedule");
  EXPECT_FALSE(tr->tracingOn());
  echoAppend("!schedule:traceoff");
  EXPECT_EQ(grepSchedule(), 0);
  fire("schedule");
  EXPECT_FALSE(tr->tracingOn()); // "Tracing is started again"? no

  echo("schedule:traceon");
  EXPECT_EQ(grepSchedule(), 1);
  fire("schedule");
  EXPECT_TRUE(tr->tracingOn());
  echoAppend("!schedule:traceon");
  EXPECT_EQ(grepSchedule(), 0);

  echo("schedule:traceoff:3");
  EXPECT_EQ(lines(read()), (std::vector<std::string>{"#### all functions enabled ####",
                                                     "schedule:traceoff:count=3"}));
  for (bool expectedOn : {false, false, false, true}) {
    fire("schedule");
    fire("schedule");
    EXPECT_EQ(tr->tracingOn(), expectedOn);
    tr->setTracingOn(true); // echo 1 > tracing_on
  }
  EXPECT_EQ(lines(read())[1], "schedule:traceoff:count=0");
  echo("!schedule:traceoff:0");
  for (const std::string &line : lines(read()))
    EXPECT_EQ(line.find("traceo"), std::string::npos) << line;
}

TEST_F(FilterTest, OtherProbeCommandsAndTheirListing) {
  int stacks = 0;
  std::vector<bool> dumps;
  tr->actions().stackTrace = [&](std::uint64_t) { ++stacks; };
  tr->actions().dump = [&](bool all) { dumps.push_back(all); };
  echo("yield:stacktrace:2 yield:dump yield:cpudump");
  EXPECT_EQ(lines(read()),
            (std::vector<std::string>{"#### all functions enabled ####", "yield:cpudump:unlimited",
                                      "yield:dump:count=1", "yield:stacktrace:count=2"}));
  for (int i = 0; i < 3; ++i)
    fire("yield");
  EXPECT_EQ(stacks, 2);
  EXPECT_EQ(dumps, (std::vector<bool>{false, true, false, false})); // dump only once
  EXPECT_THROW(tr->write(FilterFileKind::Notrace, "yield:traceoff", false), FtraceError);
}

TEST_F(FilterTest, NotraceListingAndLiveTracerFiltering) {
  EXPECT_EQ(tr->read(FilterFileKind::Notrace), "#### no functions disabled ####\n");
  core->registerFunction(tr->ops());
  EXPECT_EQ(kernel.port.bytesAt(kernel.site("yield"), 5),
            kernel.arch.call(kernel.site("yield"), kernel.addresses.ftraceCaller).bytes);
  tr->write(FilterFileKind::Notrace, "yield *unlock", false);
  EXPECT_EQ(lines(tr->read(FilterFileKind::Notrace)),
            (std::vector<std::string>{"yield", "_raw_spin_unlock", "mutex_unlock",
                                      "rcu_read_unlock", "cgroup_unlock"}));
  EXPECT_EQ(kernel.port.bytesAt(kernel.site("yield"), 5), kernel.arch.nop());
  EXPECT_EQ(core->lookupRecord(kernel.site("schedule"))->count(), 1u);
  echo("sched*");
  EXPECT_EQ(kernel.port.bytesAt(kernel.site("put_page"), 5), kernel.arch.nop());
  EXPECT_EQ(lines(read()), (std::vector<std::string>{"schedule", "schedule_timeout"}));
  core->unregisterFunction(tr->ops());
}

TEST_F(FilterTest, AppendReplaceRemovalAndIndex) {
  echo("yield");
  echoAppend("schedule");
  EXPECT_EQ(lines(read()), (std::vector<std::string>{"schedule", "yield"})); // record order
  echoAppend("!yield");
  EXPECT_EQ(lines(read()), std::vector<std::string>{"schedule"});
  echo("3 0x2");
  EXPECT_EQ(lines(read()), (std::vector<std::string>{"__schedule", "preempt_schedule_irq"}));
  EXPECT_THROW(echo("0"), FtraceError);
  EXPECT_THROW(echo("999"), FtraceError);
  EXPECT_THROW(echo("3x"), FtraceError);
}

TEST_F(FilterTest, ModuleFilters) {
  echo("*:mod:ext4");
  EXPECT_EQ(lines(read()),
            (std::vector<std::string>{"ext4_readpage [ext4]", "ext4_lock_inode [ext4]"}));
  echo("*lock*:mod:ext4");
  EXPECT_EQ(lines(read()), std::vector<std::string>{"ext4_lock_inode [ext4]"});
  echo("*lock_inode:mod:!ext4"); // no core function matches: cached, as cache_mod() does
  EXPECT_EQ(lines(read()),
            (std::vector<std::string>{"#### all functions enabled ####", "*lock_inode:mod:!ext4"}));
  // A module not loaded: the filter is cached and listed until the module loads.
  echo("*:mod:nfs");
  EXPECT_EQ(lines(read()),
            (std::vector<std::string>{"#### all functions enabled ####", "*:mod:nfs"}));
  echoAppend("!*:mod:nfs");
  EXPECT_EQ(read(), "#### all functions enabled ####\n");
  EXPECT_THROW(echo("nosuch:mod:ext4"), FtraceError);
}

TEST_F(FilterTest, BadPatternsAreClearErrors) {
  try {
    echo("sched[ule");
    FAIL();
  } catch (const FtraceError &error) {
    EXPECT_EQ(error.errnoValue(), EINVAL);
    EXPECT_NE(std::string(error.what()).find("'sched[ule'"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("not closed"), std::string::npos);
  }
  try {
    echo("schedule:explode");
    FAIL();
  } catch (const FtraceError &error) {
    EXPECT_NE(std::string(error.what()).find("unknown command 'explode'"), std::string::npos);
  }
  // Patterns before the bad one stay applied, as with a partial write in the kernel.
  EXPECT_THROW(echo("schedule nosuchfunction yield"), FtraceError);
  EXPECT_EQ(lines(read()), std::vector<std::string>{"schedule"});
  EXPECT_THROW(echoAppend("!nosuchfunction"), FtraceError);
  EXPECT_THROW(echo("schedule:traceoff:many"), FtraceError);
}

// Found by tests/fuzz (ftsim_fuzz_tracefs): the error of a bad value quoted the value as written,
// so `echo $'1\n1' > tracing_on` gave a FatalError of two lines. Control characters are escaped.
TEST_F(FilterTest, TraceFsErrorsStayOneLineWhateverTheValueHolds) {
  TraceEnvironment env;
  env.context = [] { return TraceContext{}; };
  env.symbol = [](std::uint64_t, bool) { return std::string("?"); };
  TraceFs fs(*core, env, 64);
  const std::pair<std::string, std::string> cases[] = {
      {"tracing_on", "1\n1"},
      {"buffer_size_kb", "4\n\x01"},
      {"current_tracer", "function\nnop"},
      {"enabled_functions", "x\ny"},
  };
  for (const auto &[file, value] : cases) {
    try {
      fs.write(file, value);
      ADD_FAILURE() << file << " accepted " << value;
    } catch (const FtraceError &error) {
      const std::string message = error.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      EXPECT_NE(message.find(file), std::string::npos) << message;
    }
  }
  try {
    fs.write("tracing_on", "1\n1");
  } catch (const FtraceError &error) {
    EXPECT_NE(std::string(error.what()).find("echo '1\\n1' > tracing_on"), std::string::npos)
        << error.what();
  }
}

} // namespace
} // namespace ftsim::model
