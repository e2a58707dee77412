// core/files: every input file read through one bounded reader, opened once (issue 35).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "jouleprof/core/files.hpp"

namespace fs = std::filesystem;
using namespace jouleprof;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("jp-files-" + std::to_string(getpid()));
  fs::create_directories(d);
  return d / name;
}

}  // namespace

TEST(InputFile, DevZeroIsRefusedNotReadToTheLimit) {
  // The old reader grew /dev/zero until memory ran out (std::bad_alloc).
  auto r = read_text_file("/dev/zero");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::invalid_argument);
  EXPECT_NE(r.error().message.find("/dev/zero is a character device"), std::string::npos) << r.error().message;
}

TEST(InputFile, FolderIsRefused) {
  const fs::path d = scratch("dir");
  fs::create_directories(d);
  auto r = read_text_file(d.string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("is a directory"), std::string::npos) << r.error().message;
}

TEST(InputFile, FileOverTheLimitIsRefusedBeforeItIsRead) {
  const fs::path p = scratch("big.json");
  {
    std::ofstream out(p, std::ios::binary);
    out.seekp((std::streamoff{1} << 30) - 1);  // a sparse 1 GiB file: no disk, the size is what counts
    out.put(' ');
  }
  auto r = read_text_file(p.string());  // default limit: 256 MiB
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("larger than 256 MiB"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("JOULEPROF_MAX_INPUT_MB"), std::string::npos);
  fs::remove(p);
  ::setenv("JOULEPROF_MAX_INPUT_MB", "1", 1);
  EXPECT_EQ(max_input_bytes(), std::size_t{1} << 20);
  ::unsetenv("JOULEPROF_MAX_INPUT_MB");
}

TEST(InputFile, PipeIsReadWithItsLimit) {
  ::signal(SIGPIPE, SIG_IGN);  // the second writer meets a closed pipe
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    const std::string chunk(1000, 'a');
    for (int i = 0; i < 10; ++i) {
      if (::write(fds[1], chunk.data(), chunk.size()) < 0) break;
    }
    ::close(fds[1]);
  });
  auto ok = read_text_file("/proc/self/fd/" + std::to_string(fds[0]), 1u << 20);
  writer.join();
  ::close(fds[0]);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->size(), 10000u);

  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer2([&] {
    const std::string chunk(1000, 'b');
    for (int i = 0; i < 100; ++i) {
      if (::write(fds[1], chunk.data(), chunk.size()) < 0) break;
    }
    ::close(fds[1]);
  });
  auto over = read_text_file("/proc/self/fd/" + std::to_string(fds[0]), 5000);
  ::close(fds[0]);  // the writer gets EPIPE and stops
  writer2.join();
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message.find("larger than"), std::string::npos) << over.error().message;
}

TEST(InputFile, FifoWithNoWriterReadsEmptyInsteadOfBlocking) {
  const fs::path p = scratch("fifo");
  fs::remove(p);
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  auto r = read_text_file(p.string());  // the old reader blocked in open() for ever
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->empty());
  fs::remove(p);
}

TEST(InputFile, FormatBytes) {
  EXPECT_EQ(format_bytes(300), "300 bytes");
  EXPECT_EQ(format_bytes(256u << 20), "256 MiB");
  EXPECT_EQ(format_bytes(uint64_t{3} << 30), "3 GiB");
}
