#include "core/codegen/cuda/cubin_info.h"

#include <elf.h>

#include <cstring>
#include <map>

#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

constexpr uint8_t kFormatSizedValue = 0x04;
constexpr uint8_t kRegisterCount = 0x2f;
constexpr uint8_t kFrameSize = 0x11;

class Elf {
 public:
  explicit Elf(const std::vector<uint8_t>& bytes) : bytes_(bytes) {
    Require(bytes.size() >= sizeof(Elf64_Ehdr), "shorter than an ELF header");
    std::memcpy(&header_, bytes.data(), sizeof(header_));
    Require(std::memcmp(header_.e_ident, ELFMAG, SELFMAG) == 0, "not an ELF file");
    Require(header_.e_ident[EI_CLASS] == ELFCLASS64 && header_.e_ident[EI_DATA] == ELFDATA2LSB,
            "not a 64-bit little-endian ELF file");
    Require(header_.e_shentsize == sizeof(Elf64_Shdr), "unexpected section header size");
    Require(Within(header_.e_shoff, uint64_t{header_.e_shnum} * sizeof(Elf64_Shdr)), "section headers out of bounds");
    for (uint16_t i = 0; i < header_.e_shnum; ++i) {
      Elf64_Shdr s;
      std::memcpy(&s, bytes.data() + header_.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), sizeof(s));
      Require(s.sh_type == SHT_NOBITS || Within(s.sh_offset, s.sh_size), "section contents out of bounds");
      sections_.push_back(s);
    }
    Require(header_.e_shstrndx < sections_.size(), "no section name table");
  }

  size_t count() const { return sections_.size(); }
  const Elf64_Shdr& section(size_t i) const { return sections_[i]; }
  std::string SectionName(size_t i) const { return String(sections_[header_.e_shstrndx], sections_[i].sh_name); }
  const uint8_t* Data(size_t i) const { return bytes_.data() + sections_[i].sh_offset; }

  // The name of symbol `index` of the symbol table.
  std::string SymbolName(uint32_t index) const {
    for (size_t i = 0; i < sections_.size(); ++i) {
      const Elf64_Shdr& s = sections_[i];
      if (s.sh_type != SHT_SYMTAB) continue;
      Require(s.sh_entsize == sizeof(Elf64_Sym) && uint64_t{index} < s.sh_size / sizeof(Elf64_Sym),
              "symbol index out of range");
      Require(s.sh_link < sections_.size(), "symbol table without names");
      Elf64_Sym sym;
      std::memcpy(&sym, Data(i) + uint64_t{index} * sizeof(Elf64_Sym), sizeof(sym));
      return String(sections_[s.sh_link], sym.st_name);
    }
    Require(false, "no symbol table");
    return "";
  }

 private:
  bool Within(uint64_t offset, uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  std::string String(const Elf64_Shdr& table, uint32_t offset) const {
    Require(table.sh_type == SHT_STRTAB && offset < table.sh_size, "string out of bounds");
    const char* start = reinterpret_cast<const char*>(bytes_.data() + table.sh_offset + offset);
    size_t max = table.sh_size - offset;
    return std::string(start, strnlen(start, max));
  }
  static void Require(bool ok, const char* what) {
    AGATE_REQUIRE(ok, kCorrupt) << "cubin: " << what;
  }

  const std::vector<uint8_t>& bytes_;
  Elf64_Ehdr header_;
  std::vector<Elf64_Shdr> sections_;
};

uint32_t U32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

std::vector<CubinKernelInfo> ReadCubinInfo(const std::vector<uint8_t>& cubin) {
  Elf elf(cubin);
  std::map<std::string, CubinKernelInfo> kernels;
  bool reserved = false;
  for (size_t i = 0; i < elf.count(); ++i) {
    std::string name = elf.SectionName(i);
    if (name.compare(0, 20, ".nv.shared.reserved.") == 0) reserved = true;
  }
  for (size_t i = 0; i < elf.count(); ++i) {
    std::string name = elf.SectionName(i);
    if (name.compare(0, 6, ".text.") == 0) {
      kernels[name.substr(6)].name = name.substr(6);
      kernels[name.substr(6)].shared_includes_reserved = reserved;
    }
  }
  for (size_t i = 0; i < elf.count(); ++i) {
    std::string name = elf.SectionName(i);
    if (name.compare(0, 11, ".nv.shared.") == 0) {
      auto it = kernels.find(name.substr(11));
      if (it != kernels.end()) it->second.static_shared_bytes = static_cast<int64_t>(elf.section(i).sh_size);
      continue;
    }
    if (name != ".nv.info") continue;
    const uint8_t* p = elf.Data(i);
    uint64_t size = elf.section(i).sh_size, at = 0;
    while (at + 4 <= size) {
      uint8_t format = p[at], attribute = p[at + 1];
      uint16_t value;
      std::memcpy(&value, p + at + 2, 2);
      at += 4;
      if (format != kFormatSizedValue) continue;  // the 16-bit value was the whole entry
      AGATE_REQUIRE(at + value <= size, kCorrupt) << "cubin: .nv.info entry out of bounds";
      if ((attribute == kRegisterCount || attribute == kFrameSize) && value >= 8) {
        std::string kernel = elf.SymbolName(U32(p + at));
        auto it = kernels.find(kernel);
        if (it != kernels.end()) {
          if (attribute == kRegisterCount) it->second.registers = static_cast<int>(U32(p + at + 4));
          if (attribute == kFrameSize) it->second.local_bytes = U32(p + at + 4);
        }
      }
      at += value;
    }
  }
  std::vector<CubinKernelInfo> out;
  for (auto& [name, info] : kernels) out.push_back(info);
  return out;
}

}  // namespace codegen
}  // namespace agate
