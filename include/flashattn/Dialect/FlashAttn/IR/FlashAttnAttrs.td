//===- FlashAttnAttrs.td - FlashAttn attributes ------------*- tablegen -*-===//
//
// Enumerations and the typed plan attribute of the flashattn dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHATTN_ATTRS
#define FLASHATTN_ATTRS

include "flashattn/Dialect/FlashAttn/IR/FlashAttnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enumerations
//===----------------------------------------------------------------------===//

def FlashAttn_CausalNone : I32EnumAttrCase<"none", 0>;
def FlashAttn_CausalTopLeft : I32EnumAttrCase<"top_left", 1>;
def FlashAttn_CausalBottomRight : I32EnumAttrCase<"bottom_right", 2>;

def FlashAttn_CausalKind : I32EnumAttr<"CausalKind",
    "causal mask alignment",
    [FlashAttn_CausalNone, FlashAttn_CausalTopLeft,
     FlashAttn_CausalBottomRight]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::flashattn";
}

def FlashAttn_CausalAttr : EnumAttr<FlashAttn_Dialect, FlashAttn_CausalKind,
                                    "causal"> {
  let summary = "causal mask alignment: none, top_left or bottom_right";
  let description = [{
    `top_left` keeps key j for query row i when j <= i; `bottom_right` when
    j <= i + Sk - Sq (FlashAttention 2.1+ convention: the last query row sees
    the last key). `none` applies no causal limit.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def FlashAttn_TargetHost : I32EnumAttrCase<"host", 0>;
def FlashAttn_TargetSm90 : I32EnumAttrCase<"sm90", 1>;

def FlashAttn_Target : I32EnumAttr<"Target", "code generation target",
    [FlashAttn_TargetHost, FlashAttn_TargetSm90]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::flashattn";
}

def FlashAttn_TargetAttr : EnumAttr<FlashAttn_Dialect, FlashAttn_Target,
                                    "target"> {
  let summary = "code generation target: host or sm90";
  let assemblyFormat = "`<` $value `>`";
}

def FlashAttn_ScheduleStatic : I32EnumAttrCase<"static_", 0, "static">;
def FlashAttn_ScheduleLpt : I32EnumAttrCase<"lpt", 1>;

def FlashAttn_Schedule : I32EnumAttr<"Schedule", "tile schedule",
    [FlashAttn_ScheduleStatic, FlashAttn_ScheduleLpt]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::flashattn";
}

def FlashAttn_ScheduleAttr : EnumAttr<FlashAttn_Dialect, FlashAttn_Schedule,
                                      "schedule"> {
  let summary = "tile schedule: static striding or longest-processing-time-first";
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

def FlashAttn_PlanAttr : AttrDef<FlashAttn_Dialect, "Plan"> {
  let mnemonic = "plan";
  let summary = "tile sizes, pipeline and schedule chosen for one attention";
  let description = [{
    The decisions of `flashattn-plan{target=...}`, consumed by the tiling and
    the target conversions. Fields:

    - `target`: `host` or `sm90`.
    - `block_m`, `block_n`: query rows per tile and keys per key block
      (positive).
    - `stages`: shared-memory pipeline stages for K/V (>= 1; 1 on the host).
    - `consumers`: consumer warpgroups per CTA on sm90 (1 on the host).
    - `schedule`: `static` (strided persistent loop) or `lpt`
      (longest-processing-time-first, FlashAttention-3's causal/varlen
      scheduler).
    - `num_splits`: resolved split-KV factor (>= 1).
    - `pack_gqa`: whether the query heads sharing a kv head are folded into
      the M dimension of one tile.

    Example:

    ```mlir
    #flashattn.plan<target = sm90, block_m = 128, block_n = 176, stages = 2,
                    consumers = 2, schedule = static, num_splits = 1,
                    pack_gqa = false>
    ```
  }];
  let parameters = (ins
    EnumParameter<FlashAttn_Target>:$target,
    "int64_t":$block_m,
    "int64_t":$block_n,
    "int64_t":$stages,
    "int64_t":$consumers,
    EnumParameter<FlashAttn_Schedule>:$schedule,
    "int64_t":$num_splits,
    "bool":$pack_gqa
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // FLASHATTN_ATTRS
