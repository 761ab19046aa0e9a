"""The rule registry: every rule gradlint has, in code order."""

from __future__ import annotations

from .base import Rule
from .gl000_syntax_error import SyntaxError_
from .gl001_low_precision_gradcheck_input import LowPrecisionGradcheckInput
from .gl002_gradcheck_without_requires_grad import GradcheckWithoutRequiresGrad
from .gl003_gradcheck_inputs_not_one_argument import GradcheckInputsNotOneArgument
from .gl004_backward_gradient_count import BackwardGradientCount
from .gl005_backward_uses_unsaved_tensor import BackwardUsesUnsavedTensor
from .gl006_invalid_inputs_declaration import InvalidInputsDeclaration
from .gl007_gradcheck_is_not_a_module import GradcheckIsNotAModule
from .gl008_backward_gradient_order import BackwardGradientOrder
from .gl009_unused_suppression import UnusedSuppression
from .gl010_tensor_stored_on_ctx import TensorStoredOnCtx
from .gl011_save_for_backward_called_twice import SaveForBackwardCalledTwice
from .gl012_non_tensor_saved_for_backward import NonTensorSavedForBackward
from .gl013_function_not_applied import FunctionNotApplied
from .gl014_saved_tensor_modified_in_place import SavedTensorModifiedInPlace
from .gl015_input_modified_without_mark_dirty import InputModifiedWithoutMarkDirty
from .gl016_gradgradcheck_on_once_differentiable import GradgradcheckOnOnceDifferentiable
from .gl017_gradcheck_result_discarded import GradcheckResultDiscarded
from .gl018_random_op_in_checked_function import RandomOpInCheckedFunction
from .gl019_uninitialized_or_kink_input import UninitializedOrKinkInput
from .gl020_forward_ad_without_jvp import ForwardAdWithoutJvp
from .gl021_needs_input_grad_out_of_range import NeedsInputGradOutOfRange
from .gl022_gradient_for_non_tensor_input import GradientForNonTensorInput
from .gl023_low_precision_in_checked_function import LowPrecisionInCheckedFunction
from .gl024_same_tensor_twice_in_inputs import SameTensorTwiceInInputs
from .gl025_deprecated_gradcheck_option import DeprecatedGradcheckOption
from .gl026_self_comparison_in_reference_test import SelfComparisonInReferenceTest
from .gl027_nondeterministic_backward_without_nondet_tol import NondeterministicBackwardWithoutNondetTol
from .gl028_dirty_input_not_returned import DirtyInputNotReturned
from .gl029_expanded_gradcheck_input import ExpandedGradcheckInput
from .gl030_custom_op_parameter_annotation import CustomOpParameterAnnotation
from .gl031_mutates_args_unknown_parameter import MutatesArgsUnknownParameter
from .gl032_unlisted_mutation import UnlistedMutation
from .gl033_custom_op_returns_input_alias import CustomOpReturnsInputAlias
from .gl034_register_autograd_gradient_count import RegisterAutogradGradientCount
from .gl035_setup_context_signature import SetupContextSignature
from .gl036_custom_op_backward_uses_unsaved_tensor import CustomOpBackwardUsesUnsavedTensor
from .gl037_fake_signature_mismatch import FakeSignatureMismatch
from .gl038_fake_impl_reads_data import FakeImplReadsData
from .gl039_function_under_torch_func_without_setup_context import (
    FunctionUnderTorchFuncWithoutSetupContext)
from .gl040_function_under_vmap_without_vmap_rule import FunctionUnderVmapWithoutVmapRule
from .gl041_function_under_forward_ad_without_jvp import FunctionUnderForwardAdWithoutJvp
from .gl042_custom_op_return_annotation import CustomOpReturnAnnotation
from .gl043_custom_op_keyword_only_tensor import CustomOpKeywordOnlyTensor
from .gl044_register_autograd_non_functional_op import RegisterAutogradNonFunctionalOp
from .gl045_same_tensor_twice_to_apply import SameTensorTwiceToApply
from .gl046_mark_dirty_result_discarded import MarkDirtyResultDiscarded
from .gl047_function_wraps_custom_op import FunctionWrapsCustomOp

SYNTAX_ERROR = SyntaxError_

ALL_RULES: tuple[type[Rule], ...] = (
    SyntaxError_,
    LowPrecisionGradcheckInput,
    GradcheckWithoutRequiresGrad,
    GradcheckInputsNotOneArgument,
    BackwardGradientCount,
    BackwardUsesUnsavedTensor,
    InvalidInputsDeclaration,
    GradcheckIsNotAModule,
    BackwardGradientOrder,
    UnusedSuppression,
    TensorStoredOnCtx,
    SaveForBackwardCalledTwice,
    NonTensorSavedForBackward,
    FunctionNotApplied,
    SavedTensorModifiedInPlace,
    InputModifiedWithoutMarkDirty,
    GradgradcheckOnOnceDifferentiable,
    GradcheckResultDiscarded,
    RandomOpInCheckedFunction,
    UninitializedOrKinkInput,
    ForwardAdWithoutJvp,
    NeedsInputGradOutOfRange,
    GradientForNonTensorInput,
    LowPrecisionInCheckedFunction,
    SameTensorTwiceInInputs,
    DeprecatedGradcheckOption,
    SelfComparisonInReferenceTest,
    NondeterministicBackwardWithoutNondetTol,
    DirtyInputNotReturned,
    ExpandedGradcheckInput,
    CustomOpParameterAnnotation,
    MutatesArgsUnknownParameter,
    UnlistedMutation,
    CustomOpReturnsInputAlias,
    RegisterAutogradGradientCount,
    SetupContextSignature,
    CustomOpBackwardUsesUnsavedTensor,
    FakeSignatureMismatch,
    FakeImplReadsData,
    FunctionUnderTorchFuncWithoutSetupContext,
    FunctionUnderVmapWithoutVmapRule,
    FunctionUnderForwardAdWithoutJvp,
    CustomOpReturnAnnotation,
    CustomOpKeywordOnlyTensor,
    RegisterAutogradNonFunctionalOp,
    SameTensorTwiceToApply,
    MarkDirtyResultDiscarded,
    FunctionWrapsCustomOp,
)
UNUSED_SUPPRESSION = UnusedSuppression
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
RULES_BY_NAME: dict[str, type[Rule]] = {rule.name: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "RULES_BY_NAME", "Rule", "SYNTAX_ERROR", "UNUSED_SUPPRESSION"]
