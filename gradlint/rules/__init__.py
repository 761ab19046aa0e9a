"""The rule registry: every rule gradlint has, in code order."""

from __future__ import annotations

from .base import Rule
from .file.gl000_syntax_error import SyntaxError_
from .gradcheck_calls.gl001_low_precision_gradcheck_input import LowPrecisionGradcheckInput
from .gradcheck_calls.gl002_gradcheck_without_requires_grad import GradcheckWithoutRequiresGrad
from .gradcheck_calls.gl003_gradcheck_inputs_not_one_argument import GradcheckInputsNotOneArgument
from .functions.gl004_backward_gradient_count import BackwardGradientCount
from .functions.gl005_backward_uses_unsaved_tensor import BackwardUsesUnsavedTensor
from .file.gl006_invalid_inputs_declaration import InvalidInputsDeclaration
from .gradcheck_calls.gl007_gradcheck_is_not_a_module import GradcheckIsNotAModule
from .functions.gl008_backward_gradient_order import BackwardGradientOrder
from .file.gl009_unused_suppression import UnusedSuppression
from .functions.gl010_tensor_stored_on_ctx import TensorStoredOnCtx
from .functions.gl011_save_for_backward_called_twice import SaveForBackwardCalledTwice
from .functions.gl012_non_tensor_saved_for_backward import NonTensorSavedForBackward
from .functions.gl013_function_not_applied import FunctionNotApplied
from .functions.gl014_saved_tensor_modified_in_place import SavedTensorModifiedInPlace
from .functions.gl015_input_modified_without_mark_dirty import InputModifiedWithoutMarkDirty
from .gradcheck_calls.gl016_gradgradcheck_on_once_differentiable import GradgradcheckOnOnceDifferentiable
from .gradcheck_calls.gl017_gradcheck_result_discarded import GradcheckResultDiscarded
from .gradcheck_calls.gl018_random_op_in_checked_function import RandomOpInCheckedFunction
from .gradcheck_calls.gl019_uninitialized_or_kink_input import UninitializedOrKinkInput
from .functions.gl020_forward_ad_without_jvp import ForwardAdWithoutJvp
from .functions.gl021_needs_input_grad_out_of_range import NeedsInputGradOutOfRange
from .functions.gl022_gradient_for_non_tensor_input import GradientForNonTensorInput
from .gradcheck_calls.gl023_low_precision_in_checked_function import LowPrecisionInCheckedFunction
from .gradcheck_calls.gl024_same_tensor_twice_in_inputs import SameTensorTwiceInInputs
from .gradcheck_calls.gl025_deprecated_gradcheck_option import DeprecatedGradcheckOption
from .gradcheck_calls.gl026_self_comparison_in_reference_test import SelfComparisonInReferenceTest
from .gradcheck_calls.gl027_nondeterministic_backward_without_nondet_tol import NondeterministicBackwardWithoutNondetTol
from .functions.gl028_dirty_input_not_returned import DirtyInputNotReturned
from .gradcheck_calls.gl029_expanded_gradcheck_input import ExpandedGradcheckInput
from .custom_ops.gl030_custom_op_parameter_annotation import CustomOpParameterAnnotation
from .custom_ops.gl031_mutates_args_unknown_parameter import MutatesArgsUnknownParameter
from .custom_ops.gl032_unlisted_mutation import UnlistedMutation
from .custom_ops.gl033_custom_op_returns_input_alias import CustomOpReturnsInputAlias
from .custom_ops.gl034_register_autograd_gradient_count import RegisterAutogradGradientCount
from .custom_ops.gl035_setup_context_signature import SetupContextSignature
from .custom_ops.gl036_custom_op_backward_uses_unsaved_tensor import CustomOpBackwardUsesUnsavedTensor
from .custom_ops.gl037_fake_signature_mismatch import FakeSignatureMismatch
from .custom_ops.gl038_fake_impl_reads_data import FakeImplReadsData
from .transforms.gl039_function_under_torch_func_without_setup_context import (
    FunctionUnderTorchFuncWithoutSetupContext)
from .transforms.gl040_function_under_vmap_without_vmap_rule import FunctionUnderVmapWithoutVmapRule
from .transforms.gl041_function_under_forward_ad_without_jvp import FunctionUnderForwardAdWithoutJvp
from .custom_ops.gl042_custom_op_return_annotation import CustomOpReturnAnnotation
from .custom_ops.gl043_custom_op_keyword_only_tensor import CustomOpKeywordOnlyTensor
from .custom_ops.gl044_register_autograd_non_functional_op import RegisterAutogradNonFunctionalOp

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
)
UNUSED_SUPPRESSION = UnusedSuppression
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
RULES_BY_NAME: dict[str, type[Rule]] = {rule.name: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "RULES_BY_NAME", "Rule", "SYNTAX_ERROR", "UNUSED_SUPPRESSION"]
