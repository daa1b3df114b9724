// Output files that are all-or-nothing: written to a temporary beside the target and renamed
// over it only when every write and the close succeeded; never one of the command's inputs.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace zfetch::tools {

/// One output of a command. "-" is stdout. A path that exists and is not a regular file
/// (/dev/null, a FIFO) is written in place, since it cannot be replaced by a rename.
class OutputFile {
 public:
  /// Opens the temporary (or the target itself, as above); check error() before writing.
  explicit OutputFile(std::string path);
  ~OutputFile();  ///< removes the temporary unless commit() succeeded
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  /// Where to write; nullptr when opening failed.
  [[nodiscard]] std::FILE* stream() const { return file_; }
  /// Empty while all is well; otherwise what failed, phrased to follow the path.
  [[nodiscard]] const std::string& error() const { return error_; }
  /// Where scratch files for this output belong: the temporary's directory (the target's file
  /// system, which has to hold the output anyway); "" when writing in place or to stdout.
  [[nodiscard]] std::string scratch_directory() const;
  /// What produced the content failed (`why` follows the path): close() then fails with it.
  void fail(std::string why);

  /// Flushes and closes, checking both and every earlier write. False, with error() set and
  /// the target untouched, when anything failed.
  bool close();
  /// After close(): renames the temporary over the target. False, with error() set, if not.
  bool commit();
  /// Removes the temporary without touching the target (another output failed).
  void abandon();

 private:
  std::string path_;
  std::string temporary_;  ///< empty when writing in place or to stdout
  std::FILE* file_ = nullptr;
  std::string error_;
  std::string failure_;  ///< from fail()
  bool done_ = false;    ///< committed or abandoned
};

/// A directory that a command writes files into (`zfetch run --chakra DIR`): created when
/// missing; one the command created is removed again on destruction unless kept (empty, since
/// its OutputFiles leave nothing behind when they fail).
class OutputDirectory {
 public:
  explicit OutputDirectory(std::string path);
  ~OutputDirectory();
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  /// Empty when the directory exists now; otherwise why not, phrased to follow the path.
  [[nodiscard]] const std::string& error() const { return error_; }
  /// `name` inside the directory.
  [[nodiscard]] std::string file(const std::string& name) const;
  /// The command's outputs were committed: leave the directory in place.
  void keep() { created_ = false; }

 private:
  std::string path_;
  std::string error_;
  bool created_ = false;
};

/// The error for the first output path that names one of `inputs` or another output (as the
/// same file: symlinks and hard links included); empty when there is none. "-" is exempt.
std::string check_outputs_distinct(const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs);

/// Finishes every output. When one fails, the others are abandoned too, so a command leaves
/// either all its files or none; prints `path: error: ...` for the failure and a note naming
/// what happened to each other output. True when all were written.
bool finish_outputs(const std::vector<OutputFile*>& outputs);

/// Flushes stdout; false, after `zfetch: error: cannot write to stdout: ...` on stderr, when
/// any write to it failed (a full disk, /dev/full, a closed pipe).
bool finish_stdout();

}  // namespace zfetch::tools
