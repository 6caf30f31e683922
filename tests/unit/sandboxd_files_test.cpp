// SPDX-License-Identifier: Apache-2.0
// pmon sandboxd's files (sandboxd/files_api.h): every way out of the root
// is refused, and the file operations do what the REST API promises.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sandboxd/files_api.h"

namespace pmon::sandboxd {
namespace {

namespace fs = std::filesystem;

class SandboxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pmon-unit.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    root_dir_ = base_ + "/ws";
    auto r = Root::open(root_dir_);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    root_.emplace(std::move(*r));
    // Outside the root: a secret, and a directory beside it whose name
    // starts like the root's (a prefix check would take it for inside).
    write(base_ + "/secret", "outside");
    fs::create_directories(base_ + "/ws-evil");
    write(base_ + "/ws-evil/x", "evil");
  }
  void TearDown() override { fs::remove_all(base_); }

  static void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  static std::string read(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  std::string in(const std::string& rel) const { return root_dir_ + "/" + rel; }

  std::error_code resolve_error(std::string_view path, Follow follow = Follow::last) {
    auto loc = resolve(*root_, path, follow);
    return loc ? std::error_code() : loc.error();
  }
  std::string read_via_api(std::string_view path) {
    auto o = open_path(*root_, path);
    if (!o) return "error: " + o.error().message();
    std::string out(static_cast<size_t>(o->st.st_size), '\0');
    EXPECT_EQ(::pread(o->fd.get(), out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
    return out;
  }

  std::string base_, root_dir_;
  std::optional<Root> root_;
};

const std::error_code kEscapes{EXDEV, std::generic_category()};

TEST_F(SandboxFiles, RootIsCreatedAndCanonical) {
  struct stat st {};
  ASSERT_EQ(::stat(root_dir_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  auto again = Root::open(base_ + "/./ws/");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->path(), root_->path());
}

TEST_F(SandboxFiles, DotDotOutOfTheRootIsRefused) {
  EXPECT_EQ(resolve_error(".."), kEscapes);
  EXPECT_EQ(resolve_error("../secret"), kEscapes);
  EXPECT_EQ(resolve_error("a/../../secret"), kEscapes);
  EXPECT_EQ(resolve_error("../ws-evil/x"), kEscapes);
  EXPECT_EQ(resolve_error("/../secret"), kEscapes);
  // ".." that stays inside is only a path.
  fs::create_directories(in("d"));
  write(in("f"), "inside");
  EXPECT_EQ(read_via_api("d/../f"), "inside");
  EXPECT_EQ(read_via_api("d/./../f"), "inside");
}

TEST_F(SandboxFiles, AbsolutePathsAreInsideTheRoot) {
  write(in("etc"), "not the host's");
  // A leading '/' is the root's; so is the root's own path in front.
  EXPECT_EQ(read_via_api("/etc"), "not the host's");
  EXPECT_EQ(read_via_api(root_->path() + "/etc"), "not the host's");
  // The root's path as a mere prefix of a name is not the root.
  EXPECT_NE(read_via_api(root_->path() + "-evil/x"), "evil");
  auto loc = resolve(*root_, root_->path(), Follow::last);
  ASSERT_TRUE(loc.has_value());
  EXPECT_TRUE(loc->is_root);
}

TEST_F(SandboxFiles, SymlinkOutIsRefused) {
  ASSERT_EQ(::symlink("../secret", in("rel").c_str()), 0);
  ASSERT_EQ(::symlink((base_ + "/secret").c_str(), in("abs").c_str()), 0);
  ASSERT_EQ(::symlink("/etc/passwd", in("passwd").c_str()), 0);
  ASSERT_EQ(::symlink((base_ + "/ws-evil/x").c_str(), in("prefix").c_str()), 0);
  for (const char* p : {"rel", "abs", "passwd", "prefix"}) {
    EXPECT_EQ(resolve_error(p), kEscapes) << p;
    auto o = open_path(*root_, p);
    ASSERT_FALSE(o.has_value()) << p;
    EXPECT_EQ(o.error(), kEscapes) << p;
  }
  // Not followed, the link itself is inside (DELETE still refuses it: below).
  EXPECT_EQ(resolve_error("rel", Follow::not_last), std::error_code());
}

TEST_F(SandboxFiles, SymlinkInAnIntermediateDirectoryIsRefused) {
  ASSERT_EQ(::symlink("..", in("up").c_str()), 0);
  ASSERT_EQ(::symlink(base_.c_str(), in("base").c_str()), 0);
  fs::create_directories(in("a/b"));
  ASSERT_EQ(::symlink("../../..", in("a/b/up3").c_str()), 0);
  EXPECT_EQ(resolve_error("up/secret"), kEscapes);
  EXPECT_EQ(resolve_error("base/secret"), kEscapes);
  EXPECT_EQ(resolve_error("a/b/up3/secret"), kEscapes);
  // Intermediate components are always followed, whatever Follow says.
  EXPECT_EQ(resolve_error("up/secret", Follow::not_last), kEscapes);
  // Writing through one is refused, and creates nothing outside.
  auto w = AtomicWriter::begin(*root_, "base/planted/file", 0644);
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error(), kEscapes);
  EXPECT_FALSE(fs::exists(base_ + "/planted"));
}

TEST_F(SandboxFiles, SymlinksInsideTheRootAreFollowed) {
  fs::create_directories(in("real/sub"));
  write(in("real/sub/f"), "data");
  ASSERT_EQ(::symlink("real", in("rel").c_str()), 0);
  ASSERT_EQ(::symlink((root_->path() + "/real/sub").c_str(), in("abs").c_str()), 0);
  ASSERT_EQ(::symlink("sub/../sub/f", in("real/lf").c_str()), 0);
  EXPECT_EQ(read_via_api("rel/sub/f"), "data");
  EXPECT_EQ(read_via_api("abs/f"), "data");
  EXPECT_EQ(read_via_api("rel/lf"), "data");
  // A symlink to "..": inside while it stays inside.
  ASSERT_EQ(::symlink("..", in("real/parent").c_str()), 0);
  EXPECT_EQ(read_via_api("real/parent/real/sub/f"), "data");
}

TEST_F(SandboxFiles, SymlinkLoopIsAnError) {
  ASSERT_EQ(::symlink("b", in("a").c_str()), 0);
  ASSERT_EQ(::symlink("a", in("b").c_str()), 0);
  EXPECT_EQ(resolve_error("a"), std::error_code(ELOOP, std::generic_category()));
  EXPECT_EQ(resolve_error("a/x"), std::error_code(ELOOP, std::generic_category()));
}

TEST_F(SandboxFiles, NulByteIsRefused) {
  write(in("f"), "inside");
  using namespace std::string_view_literals;
  EXPECT_EQ(resolve_error("f\0/../../secret"sv), kEscapes);
  EXPECT_EQ(resolve_error("\0"sv), kEscapes);
}

TEST_F(SandboxFiles, VeryLongPathsAreRefused) {
  const std::error_code too_long(ENAMETOOLONG, std::generic_category());
  EXPECT_EQ(resolve_error(std::string(kMaxPath + 1, 'a')), too_long);
  EXPECT_EQ(resolve_error(std::string(NAME_MAX + 1, 'a')), too_long);
  std::string deep;
  for (size_t i = 0; i < kMaxPath / 2 - 1; ++i) deep += "a/";
  EXPECT_EQ(resolve_error(deep + "f"), std::error_code(ENOENT, std::generic_category()));
  // Deeper than kMaxDepth directories: refused before as many fds are held.
  auto w = AtomicWriter::begin(*root_, deep + "f", 0644);
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error(), too_long);
}

TEST_F(SandboxFiles, MissingAndNotADirectory) {
  write(in("f"), "x");
  EXPECT_EQ(resolve_error("missing/x"), std::error_code(ENOENT, std::generic_category()));
  EXPECT_EQ(resolve_error("f/x"), std::error_code(ENOTDIR, std::generic_category()));
  auto o = open_path(*root_, "missing");
  ASSERT_FALSE(o.has_value());
  EXPECT_EQ(o.error(), std::error_code(ENOENT, std::generic_category()));
}

TEST_F(SandboxFiles, FifoIsNotOpenedForReading) {
  ASSERT_EQ(::mkfifo(in("fifo").c_str(), 0644), 0);
  auto o = open_path(*root_, "fifo");  // would block without O_NONBLOCK
  ASSERT_FALSE(o.has_value());
  EXPECT_EQ(o.error(), std::error_code(EINVAL, std::generic_category()));
}

TEST_F(SandboxFiles, AtomicWriteCreatesParentsAndSetsTheMode) {
  const mode_t old = ::umask(077);
  auto w = AtomicWriter::begin(*root_, "new/dir/file.txt", 0640);
  ::umask(old);
  ASSERT_TRUE(w.has_value()) << w.error().message();
  ASSERT_FALSE(w->write("hello ", 6));
  ASSERT_FALSE(w->write("world", 5));
  EXPECT_FALSE(fs::exists(in("new/dir/file.txt")));  // nothing there until commit
  ASSERT_FALSE(w->commit());
  EXPECT_EQ(read(in("new/dir/file.txt")), "hello world");
  struct stat st {};
  ASSERT_EQ(::stat(in("new/dir/file.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(std::distance(fs::directory_iterator(in("new/dir")), fs::directory_iterator()), 1);
}

TEST_F(SandboxFiles, AtomicWriteReplacesWholeOrNotAtAll) {
  write(in("f"), "old");
  auto reader = open_path(*root_, "f");  // a GET in flight
  ASSERT_TRUE(reader.has_value());
  {
    auto w = AtomicWriter::begin(*root_, "f", 0644);
    ASSERT_TRUE(w.has_value());
    ASSERT_FALSE(w->write("half of the new", 15));
    // Dropped before commit (the client went away): old content, no temp file.
  }
  EXPECT_EQ(read(in("f")), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(root_dir_), fs::directory_iterator()), 1);
  auto w = AtomicWriter::begin(*root_, "f", 0644);
  ASSERT_TRUE(w.has_value());
  ASSERT_FALSE(w->write("new", 3));
  ASSERT_FALSE(w->commit());
  EXPECT_EQ(read(in("f")), "new");
  char buf[8] = {};
  EXPECT_EQ(::pread(reader->fd.get(), buf, sizeof buf, 0), 3);
  EXPECT_EQ(std::string(buf), "old");  // the open file is the old one, whole
}

TEST_F(SandboxFiles, AtomicWriteThroughAnInsideSymlinkWritesItsTarget) {
  fs::create_directories(in("real"));
  ASSERT_EQ(::symlink("real/target", in("link").c_str()), 0);
  auto w = AtomicWriter::begin(*root_, "link", 0644);
  ASSERT_TRUE(w.has_value());
  ASSERT_FALSE(w->write("x", 1));
  ASSERT_FALSE(w->commit());
  EXPECT_EQ(read(in("real/target")), "x");
  EXPECT_TRUE(fs::is_symlink(in("link")));
}

TEST_F(SandboxFiles, AtomicWriteOntoADirectoryOrTheRootIsRefused) {
  fs::create_directories(in("d"));
  for (const char* p : {"d", "", "/", "d/.."}) {
    auto w = AtomicWriter::begin(*root_, p, 0644);
    ASSERT_FALSE(w.has_value()) << p;
    EXPECT_EQ(w.error(), std::error_code(EISDIR, std::generic_category())) << p;
  }
}

TEST_F(SandboxFiles, ListingIsSortedAndLeavesOutLinksThatEscape) {
  fs::create_directories(in("d/sub"));
  write(in("d/b.txt"), "12345");
  ::chmod(in("d/b.txt").c_str(), 0600);
  ASSERT_EQ(::symlink("b.txt", in("d/a-link").c_str()), 0);
  ASSERT_EQ(::symlink("../../secret", in("d/out").c_str()), 0);
  ASSERT_EQ(::symlink("nowhere", in("d/dangling").c_str()), 0);
  auto o = open_path(*root_, "d");
  ASSERT_TRUE(o.has_value());
  ASSERT_TRUE(o->directory());
  auto list = list_directory(*root_, "d", *o);
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].name, "a-link");
  EXPECT_EQ((*list)[0].size, 5u);  // what it points to
  EXPECT_FALSE((*list)[0].directory);
  EXPECT_EQ((*list)[1].name, "b.txt");
  EXPECT_EQ(mode_text((*list)[1].mode), "0600");
  EXPECT_EQ((*list)[2].name, "sub");
  EXPECT_TRUE((*list)[2].directory);
}

TEST_F(SandboxFiles, RemoveFilesAndDirectories) {
  const std::error_code not_empty(ENOTEMPTY, std::generic_category());
  fs::create_directories(in("tree/a/b"));
  write(in("tree/a/b/f"), "x");
  write(in("file"), "x");
  fs::create_directories(in("empty"));
  EXPECT_EQ(remove_path(*root_, "missing", false), std::error_code(ENOENT, std::generic_category()));
  EXPECT_FALSE(remove_path(*root_, "file", false));
  EXPECT_FALSE(fs::exists(in("file")));
  EXPECT_FALSE(remove_path(*root_, "empty", false));
  EXPECT_EQ(remove_path(*root_, "tree", false), not_empty);
  EXPECT_TRUE(fs::exists(in("tree/a/b/f")));
  EXPECT_FALSE(remove_path(*root_, "tree", true));
  EXPECT_FALSE(fs::exists(in("tree")));
}

TEST_F(SandboxFiles, RemoveNeverReachesOutside) {
  // A tree with a symlink to the outside: the link goes, not what it points to.
  fs::create_directories(in("tree"));
  ASSERT_EQ(::symlink(base_.c_str(), in("tree/base").c_str()), 0);
  EXPECT_FALSE(remove_path(*root_, "tree", true));
  EXPECT_EQ(read(base_ + "/secret"), "outside");
  // A link that points outside is refused by name, as the reference does.
  ASSERT_EQ(::symlink("../secret", in("out").c_str()), 0);
  EXPECT_EQ(remove_path(*root_, "out", false), kEscapes);
  EXPECT_EQ(remove_path(*root_, "out/", true), kEscapes);
  EXPECT_EQ(remove_path(*root_, "../secret", false), kEscapes);
  EXPECT_EQ(read(base_ + "/secret"), "outside");
  // A link inside: the link goes, its target stays.
  write(in("target"), "t");
  ASSERT_EQ(::symlink("target", in("in").c_str()), 0);
  EXPECT_FALSE(remove_path(*root_, "in", false));
  EXPECT_FALSE(fs::exists(in("in")));
  EXPECT_EQ(read(in("target")), "t");
}

TEST_F(SandboxFiles, TheRootIsEmptiedNeverRemoved) {
  fs::create_directories(in("a/b"));
  write(in("f"), "x");
  EXPECT_EQ(remove_path(*root_, "", false), std::error_code(ENOTEMPTY, std::generic_category()));
  EXPECT_FALSE(remove_path(*root_, "/", true));
  EXPECT_TRUE(fs::is_directory(root_dir_));
  EXPECT_TRUE(fs::is_empty(root_dir_));
  EXPECT_EQ(read(base_ + "/secret"), "outside");
}

}  // namespace
}  // namespace pmon::sandboxd
