// scan: parses a kernel template with Clang as CUDA device code and reads its interface; the lint checks too.
#include "scan.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Tooling/CompilationDatabase.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

namespace convgen::scanner {
namespace {

using namespace clang;

std::string absolute_clean(llvm::StringRef path) {
  llvm::SmallString<256> out(path);
  llvm::sys::fs::make_absolute(out);
  llvm::sys::path::remove_dots(out, /*remove_dot_dot=*/true);
  return std::string(out);
}

// Collapses runs of whitespace (a condition split over lines) into one space.
std::string one_line(llvm::StringRef text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// Fills param.allowed / min / max from param.values: "bool", "lo..hi" or "a,b,c". Returns false when malformed.
bool parse_values(Param& param) {
  const std::string_view text = param.values;
  if (text == "bool") {
    param.min = 0;
    param.max = 1;
    return true;
  }
  if (const auto dots = text.find(".."); dots != std::string_view::npos) {
    auto lo = parse_int(text.substr(0, dots)), hi = parse_int(text.substr(dots + 2));
    if (!lo || !hi || *lo > *hi) return false;
    param.min = *lo;
    param.max = *hi;
    return true;
  }
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    auto value = parse_int(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (!value || std::find(param.allowed.begin(), param.allowed.end(), *value) != param.allowed.end()) return false;
    param.allowed.push_back(*value);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  param.min = *std::min_element(param.allowed.begin(), param.allowed.end());
  param.max = *std::max_element(param.allowed.begin(), param.allowed.end());
  return true;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// What one run of clang over a template gathers.
struct State {
  const ScanOptions& options;
  std::string source_root;                // absolute
  std::vector<std::string> include_dirs;  // absolute
  ScanResult result;
};

// What the visitors share: the run's state, the AST, and how to turn a location into a message's.
struct Scanner {
  Scanner(State& run, ASTContext& ast) : state(run), context(ast), sm(ast.getSourceManager()) {}

  Location where(SourceLocation loc) const {
    const PresumedLoc p = sm.getPresumedLoc(sm.getExpansionLoc(loc));
    if (p.isInvalid()) return {};
    std::string file = absolute_clean(p.getFilename());
    const std::string& root = state.source_root;
    if (!root.empty() && file.size() > root.size() && file.compare(0, root.size(), root) == 0 &&
        file[root.size()] == '/')
      file = file.substr(root.size() + 1);
    return {file, p.getLine(), p.getColumn()};
  }
  bool in_main_file(SourceLocation loc) const { return sm.isWrittenInMainFile(sm.getExpansionLoc(loc)); }
  std::string text(SourceRange range) const {
    return Lexer::getSourceText(CharSourceRange::getTokenRange(sm.getExpansionRange(range).getAsRange()), sm,
                                context.getLangOpts())
        .str();
  }
  void error(SourceLocation loc, std::string message) {
    state.result.findings.push_back({where(loc), true, std::move(message), ""});
  }
  // Records a lint finding, unless the finding's line or the line above it says
  // `// convgen-lint: allow <check> (<why>)`: for what the checks cannot see (an index that is a constant only
  // after inlining), said where it happens.
  void warn(SourceLocation loc, std::string message, std::string check) {
    if (allowed_here(loc, check)) return;
    state.result.findings.push_back({where(loc), false, std::move(message), std::move(check)});
  }

  bool allowed_here(SourceLocation loc, const std::string& check) {
    const SourceLocation spelling = sm.getSpellingLoc(loc);
    const FileID file = sm.getFileID(spelling);
    const unsigned line = sm.getSpellingLineNumber(spelling);
    const llvm::StringRef buffer = sm.getBufferData(file);
    const std::string marker = "convgen-lint: allow " + check;
    for (unsigned l = line > 1 ? line - 1 : line; l <= line; ++l) {
      const SourceLocation start = sm.translateLineCol(file, l, 1);
      const unsigned offset = sm.getFileOffset(start);
      const std::size_t end = buffer.find('\n', offset);
      if (buffer.substr(offset, end == llvm::StringRef::npos ? llvm::StringRef::npos : end - offset).contains(marker))
        return true;
    }
    return false;
  }

  State& state;
  ASTContext& context;
  SourceManager& sm;
  std::vector<const VarDecl*> param_decls;  // parallel to result.interface.params
};

// Reads CONVGEN_PARAM constants, entry points and static_asserts of the main file.
class Collector : public RecursiveASTVisitor<Collector> {
 public:
  explicit Collector(Scanner& s) : s_(s) {}

  bool VisitVarDecl(VarDecl* var) {
    for (const auto* attr : var->specific_attrs<AnnotateAttr>())
      if (attr->getAnnotation() == "convgen.param" && s_.in_main_file(var->getLocation())) add_param(var, *attr);
    return true;
  }

  bool VisitFunctionDecl(FunctionDecl* fn) {
    if (!fn->hasAttr<CUDAGlobalAttr>() || !fn->isExternC() || !fn->doesThisDeclarationHaveABody() ||
        !s_.in_main_file(fn->getLocation()))
      return true;
    Interface& interface = s_.state.result.interface;
    const std::string prefix = "convgen_" + interface.family + "_default";
    Entry entry{.symbol = fn->getNameAsString(), .where = s_.where(fn->getLocation())};
    if (entry.symbol == prefix) {
      entry.suffix = "";
    } else if (entry.symbol.rfind(prefix + "_", 0) == 0 && entry.symbol.size() > prefix.size() + 1) {
      entry.suffix = entry.symbol.substr(prefix.size() + 1);
    } else {
      s_.error(fn->getLocation(), "entry '" + entry.symbol +
                                      "' is not named CONVGEN_ENTRY or CONVGEN_ENTRY_NAMED(suffix)" + " (expected " +
                                      prefix + " or " + prefix + "_<suffix>)");
      return true;
    }
    const PrintingPolicy policy = s_.context.getPrintingPolicy();
    for (const ParmVarDecl* arg : fn->parameters()) {
      entry.args.push_back({arg->getNameAsString(), arg->getType().getAsString(policy)});
      if (arg->getType()->isPointerType() && !arg->getName().startswith("g_"))
        s_.error(arg->getLocation(), "pointer parameter '" + arg->getNameAsString() + "' of entry '" + entry.symbol +
                                         "' must be named g_<what it binds to> (g_activation, g_filter, g_output, "
                                         "g_workspace or g_<plan buffer>)");
    }
    interface.entries.push_back(std::move(entry));
    return true;
  }

  bool VisitStaticAssertDecl(StaticAssertDecl* assert) {
    if (!s_.in_main_file(assert->getLocation())) return true;
    Constraint constraint{.condition = one_line(s_.text(assert->getAssertExpr()->getSourceRange())),
                          .where = s_.where(assert->getLocation())};
    if (const StringLiteral* message = assert->getMessage()) constraint.message = message->getString().str();
    mentioned(assert->getAssertExpr(), constraint.params);
    s_.state.result.interface.constraints.push_back(std::move(constraint));
    return true;
  }

 private:
  void add_param(VarDecl* var, const AnnotateAttr& attr) {
    Param param{.name = var->getNameAsString(), .where = s_.where(var->getLocation())};
    std::vector<std::string> args;
    for (const Expr* arg : attr.args())
      if (const auto* literal = dyn_cast<StringLiteral>(arg->IgnoreParenImpCasts()))
        args.push_back(literal->getString().str());
    if (args.size() != 3 || attr.args_size() != 3)
      return s_.error(var->getLocation(),
                      "CONVGEN_PARAM of " + param.name + " needs three strings: token, values, doc");
    param.token = args[0];
    param.values = args[1];
    param.doc = args[2];

    const auto* ns = dyn_cast<NamespaceDecl>(var->getDeclContext());
    if (!ns || ns->getName() != "cfg" || !ns->getParent()->isTranslationUnit())
      return s_.error(var->getLocation(), "parameter " + param.name + " must be declared in namespace cfg");
    const QualType type = var->getType().getUnqualifiedType();
    param.is_bool = type->isSpecificBuiltinType(BuiltinType::Bool);
    if (!param.is_bool && !type->isSpecificBuiltinType(BuiltinType::Int))
      return s_.error(var->getLocation(), "parameter " + param.name + " has type '" + type.getAsString() +
                                              "'; a tunable parameter is a constexpr int or bool");
    if (!var->isConstexpr() || !var->getInit())
      return s_.error(var->getLocation(), "parameter " + param.name + " must be constexpr with a default value");
    Expr::EvalResult value;
    if (!var->getInit()->EvaluateAsInt(value, s_.context))
      return s_.error(var->getLocation(), "the default of parameter " + param.name + " is not a constant");
    param.default_value = static_cast<int>(value.Val.getInt().getExtValue());

    if (param.token.empty())
      return s_.error(var->getLocation(), "parameter " + param.name + " has no token (its prefix in kernel names)");
    if (!std::all_of(param.token.begin(), param.token.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
      return s_.error(var->getLocation(),
                      "token '" + param.token + "' of parameter " + param.name + " must be lower-case letters a-z");
    if (!parse_values(param))
      return s_.error(var->getLocation(), "values '" + param.values + "' of parameter " + param.name +
                                              " must be a comma list of distinct integers, a range lo..hi or bool");
    if (param.is_bool != (param.values == "bool"))
      return s_.error(var->getLocation(), param.is_bool ? "bool parameter " + param.name + " must have values 'bool'"
                                                        : "int parameter " + param.name + " cannot have values 'bool'");
    const bool allowed = param.allowed.empty() ? param.default_value >= param.min && param.default_value <= param.max
                                               : std::find(param.allowed.begin(), param.allowed.end(),
                                                           param.default_value) != param.allowed.end();
    if (!allowed)
      return s_.error(var->getLocation(), "default " + std::to_string(param.default_value) + " of parameter " +
                                              param.name + " is not among its allowed values " + param.values);
    for (const Param& other : s_.state.result.interface.params) {
      if (other.token == param.token)
        return s_.error(var->getLocation(),
                        "token '" + param.token + "' of parameter " + param.name + " is already used by " + other.name);
      if (lower(other.name) == lower(param.name))
        return s_.error(var->getLocation(), "parameter " + param.name + " has the same field name '" +
                                                lower(param.name) + "' as " + other.name);
    }
    s_.state.result.interface.params.push_back(std::move(param));
    s_.param_decls.push_back(var);
  }

  // Names of the tunable parameters an expression refers to, in order of first mention.
  void mentioned(const Stmt* stmt, std::vector<std::string>& names) {
    if (!stmt) return;
    if (const auto* ref = dyn_cast<DeclRefExpr>(stmt)) {
      const auto& decls = s_.param_decls;
      if (auto it = std::find(decls.begin(), decls.end(), ref->getDecl()); it != decls.end()) {
        const std::string& name = s_.state.result.interface.params[it - decls.begin()].name;
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
    }
    for (const Stmt* child : stmt->children()) mentioned(child, names);
  }

  Scanner& s_;
};

// The lint checks that need the AST: dynamic indexing of per-thread arrays, entry pointers without __restrict__,
// static_assert without a message.
class Linter : public RecursiveASTVisitor<Linter> {
 public:
  explicit Linter(Scanner& s) : s_(s) {}

  // `#pragma unroll` over a loop with constant bounds: its variable is a constant in each unrolled copy.
  bool TraverseAttributedStmt(AttributedStmt* stmt) {
    const VarDecl* var = nullptr;
    if (const auto* loop = dyn_cast<ForStmt>(stmt->getSubStmt()))
      for (const Attr* attr : stmt->getAttrs())
        if (const auto* hint = dyn_cast<LoopHintAttr>(attr))
          if (auto trip = constant_loop(loop); trip && fully_unrolled(*hint, trip->second)) var = trip->first;
    if (var) unrolled_.push_back(var);
    const bool ok = RecursiveASTVisitor::TraverseAttributedStmt(stmt);
    if (var) unrolled_.pop_back();
    return ok;
  }

  bool VisitArraySubscriptExpr(ArraySubscriptExpr* subscript) {
    if (!s_.in_main_file(subscript->getExprLoc())) return true;
    const VarDecl* array = per_thread_array(subscript->getBase());
    if (array && !static_index(subscript->getIdx()))
      s_.warn(subscript->getIdx()->getBeginLoc(),
              "per-thread array '" + array->getNameAsString() +
                  "' is indexed by a value not known at compile time; it will live in local memory",
              "per-thread-dynamic-index");
    return true;
  }

  bool VisitFunctionDecl(FunctionDecl* fn) {
    if (!fn->hasAttr<CUDAGlobalAttr>() || !fn->doesThisDeclarationHaveABody() || !s_.in_main_file(fn->getLocation()))
      return true;
    for (const ParmVarDecl* arg : fn->parameters())
      if (arg->getType()->isPointerType() && !arg->getType().isRestrictQualified())
        s_.warn(arg->getLocation(),
                "pointer parameter '" + arg->getNameAsString() + "' of entry '" + fn->getNameAsString() +
                    "' is not __restrict__",
                "entry-restrict");
    return true;
  }

  bool VisitStaticAssertDecl(StaticAssertDecl* assert) {
    if (s_.in_main_file(assert->getLocation()) && !assert->getMessage())
      s_.warn(assert->getLocation(), "static_assert without a message; say what the constraint requires",
              "static-assert-message");
    return true;
  }

 private:
  // The loop variable and trip count of `for (int v = a; v < b; ++v)` (or <=, v += c) with constant a, b, c.
  std::optional<std::pair<const VarDecl*, std::int64_t>> constant_loop(const ForStmt* loop) const {
    const auto* init = dyn_cast_or_null<DeclStmt>(loop->getInit());
    if (!init || !init->isSingleDecl()) return std::nullopt;
    const auto* var = dyn_cast<VarDecl>(init->getSingleDecl());
    if (!var || !var->getInit()) return std::nullopt;
    auto start = constant(var->getInit());
    const auto* cond = dyn_cast_or_null<BinaryOperator>(loop->getCond());
    if (!start || !cond || !refers_to(cond->getLHS(), var)) return std::nullopt;
    auto bound = constant(cond->getRHS());
    std::optional<std::int64_t> step;
    if (const auto* inc = dyn_cast_or_null<UnaryOperator>(loop->getInc()); inc && inc->isIncrementOp())
      step = refers_to(inc->getSubExpr(), var) ? std::optional<std::int64_t>(1) : std::nullopt;
    else if (const auto* add = dyn_cast_or_null<CompoundAssignOperator>(loop->getInc());
             add && add->getOpcode() == BO_AddAssign && refers_to(add->getLHS(), var))
      step = constant(add->getRHS());
    if (!bound || !step || *step <= 0) return std::nullopt;
    std::int64_t end = *bound;
    if (cond->getOpcode() == BO_LE)
      ++end;
    else if (cond->getOpcode() != BO_LT)
      return std::nullopt;
    return std::pair{var, end <= *start ? 0 : (end - *start + *step - 1) / *step};
  }

  bool fully_unrolled(const LoopHintAttr& hint, std::int64_t trip) const {
    if (hint.getOption() == LoopHintAttr::Unroll)
      return hint.getState() == LoopHintAttr::Enable || hint.getState() == LoopHintAttr::Full;
    if (hint.getOption() == LoopHintAttr::UnrollCount && hint.getValue()) {
      auto count = constant(hint.getValue());
      return count && *count >= trip;
    }
    return false;
  }

  std::optional<std::int64_t> constant(const Expr* expr) const {
    if (!expr || expr->isValueDependent() || !expr->getType()->isIntegralOrEnumerationType()) return std::nullopt;
    if (auto value = expr->getIntegerConstantExpr(s_.context)) return value->getExtValue();
    return std::nullopt;
  }

  static bool refers_to(const Expr* expr, const VarDecl* var) {
    const auto* ref = dyn_cast<DeclRefExpr>(expr->IgnoreParenImpCasts());
    return ref && ref->getDecl() == var;
  }

  // The variable whose per-thread array (a local, a reference parameter or a member of one) `base` decays from.
  static const VarDecl* per_thread_array(const Expr* base) {
    const Expr* e = base->IgnoreParens();
    while (true) {
      const auto* decay = dyn_cast<ImplicitCastExpr>(e);
      if (!decay || decay->getCastKind() != CK_ArrayToPointerDecay) return nullptr;
      e = decay->getSubExpr()->IgnoreParens();
      const auto* outer = dyn_cast<ArraySubscriptExpr>(e);
      if (!outer) break;
      e = outer->getBase()->IgnoreParens();
    }
    while (const auto* member = dyn_cast<MemberExpr>(e)) {
      if (member->isArrow()) return nullptr;  // through a pointer: could be any memory
      e = member->getBase()->IgnoreParenImpCasts();
    }
    const auto* ref = dyn_cast<DeclRefExpr>(e);
    const auto* var = ref ? dyn_cast<VarDecl>(ref->getDecl()) : nullptr;
    if (!var || var->hasAttr<CUDASharedAttr>() || var->hasAttr<CUDAConstantAttr>() || var->hasAttr<CUDADeviceAttr>())
      return nullptr;
    return var->hasLocalStorage() ? var : nullptr;
  }

  // Whether an index is a compile-time constant once `#pragma unroll` loops over constant bounds are unrolled.
  bool static_index(const Stmt* stmt) const {
    if (const auto* expr = dyn_cast<Expr>(stmt)) {
      if (expr->isValueDependent() || constant(expr)) return true;
    }
    if (const auto* ref = dyn_cast<DeclRefExpr>(stmt)) {
      const auto* var = dyn_cast<VarDecl>(ref->getDecl());
      return !var || std::find(unrolled_.begin(), unrolled_.end(), var) != unrolled_.end() ||
             var->isUsableInConstantExpressions(s_.context);
    }
    if (const auto* member = dyn_cast<MemberExpr>(stmt); member && isa<FieldDecl>(member->getMemberDecl()))
      return false;  // a value held in memory (threadIdx.x, r_pixel[i].d0)
    return std::all_of(stmt->child_begin(), stmt->child_end(), [&](const Stmt* c) { return !c || static_index(c); });
  }

  Scanner& s_;
  std::vector<const VarDecl*> unrolled_;
};

// Includes of the main file outside the allowed set (common.cuh, interface.cuh, templates/*.cuh).
class IncludeChecker : public PPCallbacks {
 public:
  IncludeChecker(State& state, SourceManager& sm) : state_(state), sm_(sm) {}
  void InclusionDirective(SourceLocation hash, const Token&, StringRef name, bool angled, CharSourceRange,
                          const FileEntry* file, StringRef, StringRef, const Module*,
                          SrcMgr::CharacteristicKind) override {
    if (!sm_.isWrittenInMainFile(hash)) return;
    bool allowed = false;
    if (file && !angled && name.endswith(".cuh")) {
      const std::string dir = absolute_clean(llvm::sys::path::parent_path(
          file->tryGetRealPathName().empty() ? file->getName() : file->tryGetRealPathName()));
      allowed = std::find(state_.include_dirs.begin(), state_.include_dirs.end(), dir) != state_.include_dirs.end();
    }
    if (!allowed) pending.push_back({hash, name.str()});
  }
  std::vector<std::pair<SourceLocation, std::string>> pending;  // reported once the AST (and locations) are ready

 private:
  State& state_;
  SourceManager& sm_;
};

class Consumer : public ASTConsumer {
 public:
  Consumer(State& state, IncludeChecker* includes) : state_(state), includes_(includes) {}
  void HandleTranslationUnit(ASTContext& context) override {
    if (context.getDiagnostics().hasErrorOccurred()) return;
    state_.result.parsed = true;
    Scanner scanner(state_, context);
    Collector(scanner).TraverseDecl(context.getTranslationUnitDecl());
    Interface& interface = state_.result.interface;
    const SourceLocation top =
        context.getSourceManager().getLocForStartOfFile(context.getSourceManager().getMainFileID());
    if (std::none_of(interface.entries.begin(), interface.entries.end(),
                     [](const Entry& e) { return e.suffix.empty(); }))
      scanner.error(top,
                    "no main entry: expected extern \"C\" __global__ void CONVGEN_ENTRY(...) (the symbol convgen_" +
                        interface.family + "_default)");
    if (!state_.options.lint) return;
    for (const auto& [hash, name] : includes_->pending)
      scanner.warn(
          hash,
          "#include \"" + name + "\" is outside the allowed set: common.cuh, interface.cuh and other templates/*.cuh",
          "include");
    Linter(scanner).TraverseDecl(context.getTranslationUnitDecl());
    for (std::size_t i = 0; i < scanner.param_decls.size(); ++i)
      if (!scanner.param_decls[i]->isReferenced())
        scanner.warn(scanner.param_decls[i]->getLocation(),
                     "parameter " + interface.params[i].name + " is declared but never used", "unused-param");
  }

 private:
  State& state_;
  IncludeChecker* includes_;
};

class Action : public ASTFrontendAction {
 public:
  explicit Action(State& state) : state_(state) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance& ci, StringRef) override {
    auto includes = std::make_unique<IncludeChecker>(state_, ci.getSourceManager());
    IncludeChecker* raw = includes.get();
    ci.getPreprocessor().addPPCallbacks(std::move(includes));
    return std::make_unique<Consumer>(state_, raw);
  }

 private:
  State& state_;
};

class Factory : public tooling::FrontendActionFactory {
 public:
  explicit Factory(State& state) : state_(state) {}
  std::unique_ptr<FrontendAction> create() override { return std::make_unique<Action>(state_); }

 private:
  State& state_;
};

bool line_order(const Finding& a, const Finding& b) {
  return std::tie(a.where.file, a.where.line, a.where.column) < std::tie(b.where.file, b.where.line, b.where.column);
}

}  // namespace

ScanResult scan_template(const std::string& file, const ScanOptions& options) {
  State state{.options = options,
              .source_root = options.source_root.empty() ? "" : absolute_clean(options.source_root)};
  state.result.interface.template_file = llvm::sys::path::filename(file).str();
  state.result.interface.family = llvm::sys::path::stem(file).str();
  for (const std::string& dir : options.include_dirs) state.include_dirs.push_back(absolute_clean(dir));

  // NVRTC's view of a template: device code, no CUDA or system headers, the built-ins from the shim.
  std::vector<std::string> args = {"-x",
                                   "cuda",
                                   "--cuda-device-only",
                                   "-nocudainc",
                                   "-nocudalib",
                                   "--cuda-gpu-arch=sm_80",
                                   "-std=c++17",
                                   "-nostdinc",
                                   "-Wno-unknown-cuda-version",
                                   "-Wno-cuda-compat",
                                   "-resource-dir",
                                   CONVGEN_CLANG_RESOURCE_DIR,
                                   "-DCONVGEN_TEMPLATE_SCANNER",
                                   "-include",
                                   CONVGEN_SCANNER_SHIM};
  for (const std::string& dir : state.include_dirs) args.push_back("-I" + dir);
  tooling::FixedCompilationDatabase database(".", args);
  tooling::ClangTool tool(database, {file});
  Factory factory(state);
  const int status = tool.run(&factory);
  if (status != 0) state.result.parsed = false;

  // The path in messages and #line: relative to the source root.
  std::string path = absolute_clean(file);
  if (!state.source_root.empty() && path.compare(0, state.source_root.size() + 1, state.source_root + "/") == 0)
    path = path.substr(state.source_root.size() + 1);
  state.result.interface.source_path = path;
  if (state.result.interface.family.empty() ||
      !std::all_of(state.result.interface.family.begin(), state.result.interface.family.end(),
                   [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }))
    state.result.findings.push_back(Finding{.where = Location{.file = path, .line = 1, .column = 1},
                                            .message = "the file stem (the family name) must be lower-case letters, "
                                                       "digits and _"});
  std::stable_sort(state.result.findings.begin(), state.result.findings.end(), line_order);
  return std::move(state.result);
}

std::string format_finding(const Finding& finding) {
  std::string out = finding.where.file + ":" + std::to_string(finding.where.line) + ":" +
                    std::to_string(finding.where.column) + (finding.error ? ": error: " : ": warning: ") +
                    finding.message;
  if (!finding.check.empty()) out += " [" + finding.check + "]";
  return out;
}

}  // namespace convgen::scanner
