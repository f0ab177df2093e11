#include "ftsim/model/Tracers.h"

#include <fmt/format.h>

#include <algorithm>

namespace ftsim::model {

// --- RingBuffer ----------------------------------------------------------------------------------

RingBuffer::RingBuffer(unsigned cpus, std::size_t entriesPerCpu)
    : buffers_(cpus), written_(cpus, 0), capacity_(std::max<std::size_t>(entriesPerCpu, 1)) {}

void RingBuffer::write(const TraceRecord &record) {
  const unsigned cpu = record.context.cpu;
  if (cpu >= buffers_.size())
    FTSIM_PANIC("trace event for CPU {} of {}", cpu, buffers_.size());
  auto &buffer = buffers_[cpu];
  if (buffer.size() == capacity_)
    buffer.pop_front(); // overwrite mode (ring_buffer_overwrite)
  buffer.push_back(record);
  ++written_[cpu];
}

void RingBuffer::reset() {
  for (auto &buffer : buffers_)
    buffer.clear();
  std::fill(written_.begin(), written_.end(), 0);
}

void RingBuffer::resize(std::size_t entriesPerCpu) {
  capacity_ = std::max<std::size_t>(entriesPerCpu, 1);
  for (auto &buffer : buffers_)
    while (buffer.size() > capacity_)
      buffer.pop_front();
}

std::size_t RingBuffer::entries() const {
  std::size_t n = 0;
  for (const auto &buffer : buffers_)
    n += buffer.size();
  return n;
}

std::size_t RingBuffer::written() const {
  std::size_t n = 0;
  for (std::size_t w : written_)
    n += w;
  return n;
}

// __find_next_entry(): the smallest timestamp over the CPUs' next events.
std::vector<RingBuffer::Position> RingBuffer::merged() const {
  std::vector<Position> out;
  std::vector<std::size_t> next(buffers_.size(), 0);
  for (;;) {
    int best = -1;
    for (unsigned cpu = 0; cpu < buffers_.size(); ++cpu) {
      if (next[cpu] >= buffers_[cpu].size())
        continue;
      if (best < 0 || buffers_[cpu][next[cpu]].context.timestampNs <
                          buffers_[best][next[best]].context.timestampNs)
        best = static_cast<int>(cpu);
    }
    if (best < 0)
      return out;
    out.push_back({static_cast<unsigned>(best), next[best]++});
  }
}

// --- function tracer output -----------------------------------------------------------------

namespace {

// print_event_info()
std::string eventInfo(const RingBuffer &buffer) {
  return fmt::format("# entries-in-buffer/entries-written: {}/{}   #P:{}\n#\n", buffer.entries(),
                     buffer.written(), buffer.cpus());
}

// trace_print_lat_fmt(): irqs-off, need-resched, hardirq/softirq, preempt-depth, migrate-disable.
std::string latencyFlags(const TraceContext &c) {
  std::string out;
  out += c.irqsOff ? 'd' : '.';
  out += c.needResched ? 'N' : '.';
  out += c.hardirq && c.softirq ? 'H' : c.hardirq ? 'h' : c.softirq ? 's' : '.';
  out += (c.preemptCount & 0xf) ? fmt::format("{:x}", c.preemptCount & 0xf) : ".";
  out += (c.preemptCount & 0xf0) ? fmt::format("{:x}", (c.preemptCount >> 4) & 0xf) : ".";
  return out;
}

// trace_print_context() + trace_print_time() (TRACE_FILE_TIME_IN_NS): "%16s-%-7d [%03d] flags
// %5lu.%06lu: "
std::string contextColumns(const TraceContext &c) {
  const std::uint64_t usecs = c.timestampNs / 1000;
  return fmt::format("{:>16}-{:<7} [{:03}] {} {:5}.{:06}: ", c.comm, c.pid, c.cpu, latencyFlags(c),
                     usecs / 1000000, usecs % 1000000);
}

} // namespace

std::string formatFunctionTrace(const RingBuffer &buffer, std::string_view tracerName,
                                const SymbolName &symbol) {
  // s_show() for the header, then trace_default_header() -> print_func_help_header_irq() with
  // prec = 2 (no TGID column).
  std::string out = fmt::format("# tracer: {}\n#\n", tracerName);
  out += eventInfo(buffer);
  const std::string sp = "  ";
  out += "#                            " + sp + "  _-----=> irqs-off/BH-disabled\n";
  out += "#                            " + sp + " / _----=> need-resched\n";
  out += "#                            " + sp + "| / _---=> hardirq/softirq\n";
  out += "#                            " + sp + "|| / _--=> preempt-depth\n";
  out += "#                            " + sp + "||| / _-=> migrate-disable\n";
  out += "#                            " + sp + "|||| /     delay\n";
  out += "#           TASK-PID  " + sp + " CPU#  |||||  TIMESTAMP  FUNCTION\n";
  out += "#              | |    " + sp + "   |   |||||     |         |\n";
  for (const auto &pos : buffer.merged()) {
    const TraceRecord &r = buffer.cpuBuffer(pos.cpu)[pos.index];
    out += contextColumns(r.context);
    if (r.kind == TraceRecordKind::Function) {
      // trace_fn_trace(): "%ps" then " <-%ps" when there is a parent.
      out += symbol(r.ip, false);
      if (r.parentIp)
        out += " <-" + symbol(r.parentIp, false);
      out += "\n";
    } else if (r.kind == TraceRecordKind::Stack) {
      // trace_stack_print(): "<stack trace>" then " => %pS" per frame.
      out += "<stack trace>\n";
      for (std::uint64_t addr : r.stack)
        out += " => " + symbol(addr, false) + "\n";
    }
  }
  return out;
}

// --- function_graph output -----------------------------------------------------------------

char overheadMark(std::uint64_t ns) {
  // The mark[] table of trace_output.c: the first threshold the duration exceeds.
  static const std::pair<std::uint64_t, char> marks[] = {{1000000000ULL, '$'}, {100000000ULL, '@'},
                                                         {10000000ULL, '*'},   {1000000ULL, '#'},
                                                         {100000ULL, '!'},     {10000ULL, '+'}};
  for (auto [threshold, mark] : marks)
    if (ns > threshold)
      return mark;
  return ' ';
}

std::string graphDuration(std::uint64_t ns) {
  // trace_print_graph_duration(): usecs, then up to 3 nsecs digits while the number stays within
  // 7 characters, then " us " and padding to 8 characters of number.
  const std::string usecs = fmt::format("{}", ns / 1000);
  std::string out = usecs;
  std::size_t len = usecs.size();
  if (len < 7) {
    const std::size_t digits = std::min<std::size_t>(4, 8 - len - 1); // snprintf size - 1
    const std::string nsecs = fmt::format("{:03}", ns % 1000).substr(0, digits);
    out += "." + nsecs;
    len += nsecs.size() + 1;
  }
  out += " us ";
  for (std::size_t i = len; i < 8; ++i)
    out += ' ';
  return out;
}

namespace {

// print_graph_proc(): "comm-pid" centred in TRACE_GRAPH_PROCINFO_LENGTH (14), comm cut at 7.
std::string graphProc(const TraceContext &c) {
  const std::string comm = c.comm.substr(0, 7);
  const std::string text = fmt::format("{}-{}", comm, c.pid);
  const std::size_t spaces = text.size() < 14 ? 14 - text.size() : 0;
  return std::string(spaces / 2, ' ') + text + std::string(spaces - spaces / 2, ' ');
}

} // namespace

std::string formatGraphTrace(const RingBuffer &buffer, const SymbolName &symbol) {
  std::string out = "# tracer: function_graph\n#\n";
  // __print_graph_headers_flags() with CPU | OVERHEAD | DURATION | IRQS.
  out += "# CPU  DURATION                  FUNCTION CALLS\n";
  out += "# |     |   |                     |   |   |   |\n";
  const unsigned cpuWidth =
      static_cast<unsigned>(fmt::format("{}", buffer.cpus() > 0 ? buffer.cpus() - 1 : 0).size());
  // struct fgraph_cpu_data: last_pid, depth, enter_funcs[]
  struct CpuData {
    int lastPid = -1;
    std::map<int, std::uint64_t> enterFuncs;
  };
  std::vector<CpuData> cpuData(buffer.cpus());
  const auto positions = buffer.merged();
  std::vector<bool> consumed(positions.size(), false);
  // Index of each position in `positions`, to skip a leaf's return.
  std::map<std::pair<unsigned, std::size_t>, std::size_t> order;
  for (std::size_t i = 0; i < positions.size(); ++i)
    order[{positions[i].cpu, positions[i].index}] = i;

  for (std::size_t i = 0; i < positions.size(); ++i) {
    if (consumed[i])
      continue;
    const auto &pos = positions[i];
    const auto &cpuBuffer = buffer.cpuBuffer(pos.cpu);
    const TraceRecord &r = cpuBuffer[pos.index];
    if (r.kind != TraceRecordKind::GraphEntry && r.kind != TraceRecordKind::GraphReturn)
      continue;
    CpuData &data = cpuData[pos.cpu];
    const std::string cpuColumn = fmt::format(" {:>{}}) ", pos.cpu, cpuWidth);
    // verif_pid(): a separator when the CPU switches tasks.
    if (data.lastPid != r.context.pid) {
      const int prev = data.lastPid;
      data.lastPid = r.context.pid;
      if (prev != -1) {
        TraceContext prevContext;
        prevContext.pid = prev;
        for (std::size_t back = pos.index; back-- > 0;)
          if (cpuBuffer[back].context.pid == prev) {
            prevContext = cpuBuffer[back].context;
            break;
          }
        out += " ------------------------------------------\n";
        out += cpuColumn + graphProc(prevContext) + " => " + graphProc(r.context) + "\n";
        out += " ------------------------------------------\n\n";
      }
    }
    const std::string indent(static_cast<std::size_t>(std::max(r.depth, 0)) * 2, ' ');
    if (r.kind == TraceRecordKind::GraphEntry) {
      // get_return_for_leaf(): is the next event of this CPU the matching return?
      const TraceRecord *next =
          pos.index + 1 < cpuBuffer.size() ? &cpuBuffer[pos.index + 1] : nullptr;
      if (next && next->kind == TraceRecordKind::GraphReturn &&
          next->context.pid == r.context.pid && next->ip == r.ip) {
        consumed[order[{pos.cpu, pos.index + 1}]] = true;
        const std::uint64_t duration = next->returnTime - next->callTime;
        // print_graph_entry_leaf()
        out += cpuColumn + fmt::format("{} ", overheadMark(duration)) + graphDuration(duration) +
               "|  " + indent + symbol(r.ip, false) + "();\n";
        data.enterFuncs.erase(r.depth);
      } else {
        // print_graph_entry_nested(): FLAGS_FILL_FULL in the duration column.
        data.enterFuncs[r.depth] = r.ip;
        out += cpuColumn + "              |  " + indent + symbol(r.ip, false) + "() {\n";
      }
    } else {
      const std::uint64_t duration = r.returnTime - r.callTime;
      // print_graph_return(): "}" or, without a matching entry, "} /* func */".
      auto it = data.enterFuncs.find(r.depth);
      const bool match = it != data.enterFuncs.end() && it->second == r.ip;
      if (it != data.enterFuncs.end())
        data.enterFuncs.erase(it);
      out += cpuColumn + fmt::format("{} ", overheadMark(duration)) + graphDuration(duration) +
             "|  " + indent + (match ? "}\n" : "} /* " + symbol(r.ip, false) + " */\n");
    }
  }
  return out;
}

// --- function profiler ------------------------------------------------------------------------

void FunctionProfiler::reset() {
  for (auto &cpu : stats_)
    cpu.clear();
}

FunctionProfiler::Entry &FunctionProfiler::entry(unsigned cpu, std::uint64_t ip) {
  auto &list = stats_.at(cpu);
  for (auto &e : list)
    if (e.ip == ip)
      return e;
  list.push_back(Entry{ip, 0, 0, 0});
  return list.back();
}

void FunctionProfiler::hit(unsigned cpu, std::uint64_t ip) { ++entry(cpu, ip).counter; }

void FunctionProfiler::time(unsigned cpu, std::uint64_t ip, std::uint64_t ns) {
  Entry &e = entry(cpu, ip);
  e.time += ns;
  e.timeSquared += ns * ns;
}

std::uint64_t FunctionProfiler::hits(unsigned cpu, std::uint64_t ip) const {
  for (const auto &e : stats_.at(cpu))
    if (e.ip == ip)
      return e.counter;
  return 0;
}

std::string FunctionProfiler::show(unsigned cpu, const SymbolName &symbol) const {
  // function_stat_headers() with CONFIG_FUNCTION_GRAPH_TRACER.
  std::string out = "  Function                               Hit    Time            Avg"
                    "             s^2\n"
                    "  --------                               ---    ----            ---"
                    "             ---\n";
  // stat_seq_init() inserts into an rbtree with function_stat_cmp (by time); an equal entry goes
  // left of those already there, and the tree is printed from the largest.
  std::vector<const Entry *> sorted;
  for (const auto &e : stats_.at(cpu))
    if (e.counter)
      sorted.push_back(&e);
  std::reverse(sorted.begin(), sorted.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Entry *a, const Entry *b) { return a->time > b->time; });
  for (const Entry *e : sorted) {
    // function_stat_show(): "  %-30.30s  %10lu" then time, avg and s^2 as graph durations.
    const std::uint64_t avg = e->time / e->counter;
    std::uint64_t stddev = 0;
    if (e->counter > 1)
      stddev = (e->counter * e->timeSquared - e->time * e->time) /
               (e->counter * (e->counter - 1) * 1000);
    std::string name = symbol(e->ip, false).substr(0, 30);
    out += fmt::format("  {:<30}  {:>10}", name, e->counter);
    out += "    " + graphDuration(e->time) + "    " + graphDuration(avg) + "    " +
           graphDuration(stddev) + "\n";
  }
  return out;
}

// --- stack tracer -------------------------------------------------------------------------------

void StackTracer::check(std::uint64_t ip, const StackSample &sample) {
  // check_stack(): only a new maximum is recorded.
  if (sample.depth <= maxSize_)
    return;
  maxSize_ = sample.depth;
  entries_.clear();
  // The traced function itself first (its frame starts at the sampled stack pointer), then every
  // return address where it was found on the stack, innermost first.
  entries_.push_back({ip, sample.depth});
  for (const auto &frame : sample.frames)
    entries_.push_back({frame.returnAddress, frame.bytesToTop});
}

std::string StackTracer::show(bool enabled, const SymbolName &symbol) const {
  std::string out = fmt::format("        Depth    Size   Location    ({} entries)\n"
                                "        -----    ----   --------\n",
                                entries_.size());
  if (!enabled && !maxSize_)
    out += "#\n"
           "#  Stack tracer disabled\n"
           "#\n"
           "# To enable the stack tracer, either add 'stacktrace' to the\n"
           "# kernel command line\n"
           "# or 'echo 1 > /proc/sys/kernel/stack_tracer_enabled'\n"
           "#\n";
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const std::uint64_t size =
        i + 1 == entries_.size() ? entries_[i].index : entries_[i].index - entries_[i + 1].index;
    out += fmt::format("{:>3}) {:>8}   {:>5}   {}\n", i, entries_[i].index, size,
                       symbol(entries_[i].address, true));
  }
  return out;
}

} // namespace ftsim::model
