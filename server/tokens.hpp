#pragma once
// The bearer tokens of jobctl serve: a file of "NAME ROLE TOKEN" lines, mode
// 600, each token with a role. Roles nest: admin can do what operate can,
// operate what submit can, submit what read can.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::server {

enum class Role { read = 0, submit = 1, operate = 2, admin = 3 };

std::string_view to_string(Role r);

struct Token {
  std::string name;  // who changes made with it are recorded as
  Role role;
  std::string secret;
};

class Tokens {
 public:
  // Reads `path`. Throws usage Error for a file others may read or write, a
  // malformed line (never quoting the token), an unknown role, a token
  // shorter than 16 characters, or a name or token given twice.
  static Tokens load(const std::string& path);

  // The token whose secret is `presented`, compared in constant time.
  std::optional<Token> find(std::string_view presented) const;

  size_t size() const { return tokens_.size(); }

 private:
  std::vector<Token> tokens_;
};

}  // namespace jobctl::server
