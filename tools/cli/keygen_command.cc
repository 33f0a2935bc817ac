// agate keygen --secret-key FILE --public-key FILE: a fresh Ed25519 key pair for signing
// modules (agate compile --sign-key) and checking them (agate run --public-key, or
// agate_module_load_from_*_signed). Existing files are never overwritten: a lost secret key
// cannot be recovered, so replacing one must be a deliberate act (delete it first).
#include <filesystem>
#include <iostream>

#include "core/serialize/module_signing.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "tools/cli/command.h"

namespace agate {
namespace cli {
namespace {

struct KeygenFlags {
  std::string secret_key;
  std::string public_key;
};

int RunKeygen(const KeygenFlags& flags) {
  for (const std::string& path : {flags.secret_key, flags.public_key}) {
    AGATE_REQUIRE(!std::filesystem::exists(path), kInvalidArgument)
        << "'" << path << "' exists; agate keygen does not overwrite keys (remove it first)";
  }
  AGATE_REQUIRE(flags.secret_key != flags.public_key, kInvalidArgument) << "the two key files must differ";
  serialize::SigningKeyPair keys = serialize::GenerateSigningKeyPair();
  // Atomic writes create the files with mode 0600 (mkstemp), readable by their owner only.
  WriteFileAtomically(flags.secret_key, keys.secret_key);
  WriteFileAtomically(flags.public_key, keys.public_key);
  std::cout << "wrote the secret key " << flags.secret_key << " (keep it private) and the public key "
            << flags.public_key << "\n";
  return 0;
}

}  // namespace

CommandRunner RegisterKeygenCommand(CLI::App& app) {
  auto flags = std::make_shared<KeygenFlags>();
  CLI::App* cmd = app.add_subcommand("keygen", "make an Ed25519 key pair for signing modules");
  cmd->add_option("--secret-key", flags->secret_key, "write the secret key (64 bytes) here")->required();
  cmd->add_option("--public-key", flags->public_key, "write the public key (32 bytes) here")->required();
  return [flags] { return RunKeygen(*flags); };
}

}  // namespace cli
}  // namespace agate
