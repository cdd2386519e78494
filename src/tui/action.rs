//! The user's vocabulary: every command a key can trigger.
//!
//! The serde names of [`Action`] are the action names in keymap files, and
//! [`Action::description`] is an exhaustive match, so an action cannot ship
//! without the help text that the help overlay shows for it.

use serde::{Deserialize, Serialize};

/// One command, independent of the key that triggers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Quit,
    ToggleHelp,
    Close,
    NextPair,
    PrevPair,
    PageDown,
    PageUp,
    FirstPair,
    LastPair,
    FocusNext,
    ScrollDown,
    ScrollUp,
    ScrollPageDown,
    ScrollPageUp,
    ScrollTop,
    ScrollBottom,
    ScrollLeft,
    ScrollRight,
    NextChange,
    PrevChange,
    ToggleAllPairs,
    CycleSort,
    ReverseSort,
    ToggleGroup,
    ToggleFold,
    FoldAll,
    ToggleSideBySide,
    ToggleRaw,
    ToggleProblems,
    ClearCategory,
    AcceptSuggestion,
    AcceptAllSuggestions,
    ClassifyView,
    NextDisagreement,
    ResolveDisagreement,
    ToggleMark,
    ClearMarks,
    EditNote,
    CarryDecisions,
    Undo,
    Redo,
    ToggleUnclassified,
    Suspend,
    Reload,
    SearchHelp,
    Confirm,
    Cancel,
    NoteSave,
    NoteCancel,
    NoteNewline,
    NoteLeft,
    NoteRight,
    NoteUp,
    NoteDown,
    NoteWordLeft,
    NoteWordRight,
    NoteHome,
    NoteEnd,
    NoteBackspace,
    NoteDelete,
    NoteDeleteWord,
    NoteClear,
    StartQuery,
    Choose,
    Export,
    CycleFormat,
    FuzzyJump,
    ShowFacets,
    ShowSummary,
    InputSubmit,
    InputCancel,
    InputUp,
    InputDown,
    InputLeft,
    InputRight,
    InputHome,
    InputEnd,
    InputBackspace,
    InputDelete,
    InputDeleteWord,
    InputClear,
    /// Give the pair (or the marked pairs, or the case's pairs) the category
    /// with this key. Category keys are the taxonomy's, not a keymap file's:
    /// the keymap produces this for a character no mode binds
    /// ([`crate::tui::keymap::Keymap::category`]), so files cannot name it.
    #[serde(skip)]
    Classify(char),
}

/// Where an action belongs in the help overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Move,
    Find,
    View,
    Triage,
    Note,
    Prompt,
    General,
}

impl Group {
    /// The heading shown in help.
    pub fn title(self) -> &'static str {
        match self {
            Group::Move => "Move",
            Group::Find => "Find",
            Group::View => "View",
            Group::Triage => "Triage",
            Group::Note => "Note editor",
            Group::Prompt => "Prompts",
            Group::General => "General",
        }
    }
}

impl Action {
    /// Every action a keymap file can bind, for completeness checks of the
    /// keymaps ([`Action::Classify`] is bound by the taxonomy instead).
    pub const ALL: &'static [Action] = &[
        Action::Quit,
        Action::ToggleHelp,
        Action::Close,
        Action::NextPair,
        Action::PrevPair,
        Action::PageDown,
        Action::PageUp,
        Action::FirstPair,
        Action::LastPair,
        Action::FocusNext,
        Action::ScrollDown,
        Action::ScrollUp,
        Action::ScrollPageDown,
        Action::ScrollPageUp,
        Action::ScrollTop,
        Action::ScrollBottom,
        Action::ScrollLeft,
        Action::ScrollRight,
        Action::NextChange,
        Action::PrevChange,
        Action::ToggleAllPairs,
        Action::CycleSort,
        Action::ReverseSort,
        Action::ToggleGroup,
        Action::ToggleFold,
        Action::FoldAll,
        Action::ToggleSideBySide,
        Action::ToggleRaw,
        Action::ToggleProblems,
        Action::ClearCategory,
        Action::AcceptSuggestion,
        Action::AcceptAllSuggestions,
        Action::ClassifyView,
        Action::NextDisagreement,
        Action::ResolveDisagreement,
        Action::ToggleMark,
        Action::ClearMarks,
        Action::EditNote,
        Action::CarryDecisions,
        Action::Undo,
        Action::Redo,
        Action::ToggleUnclassified,
        Action::Suspend,
        Action::Reload,
        Action::SearchHelp,
        Action::Confirm,
        Action::Cancel,
        Action::NoteSave,
        Action::NoteCancel,
        Action::NoteNewline,
        Action::NoteLeft,
        Action::NoteRight,
        Action::NoteUp,
        Action::NoteDown,
        Action::NoteWordLeft,
        Action::NoteWordRight,
        Action::NoteHome,
        Action::NoteEnd,
        Action::NoteBackspace,
        Action::NoteDelete,
        Action::NoteDeleteWord,
        Action::NoteClear,
        Action::StartQuery,
        Action::Choose,
        Action::Export,
        Action::CycleFormat,
        Action::FuzzyJump,
        Action::ShowFacets,
        Action::ShowSummary,
        Action::InputSubmit,
        Action::InputCancel,
        Action::InputUp,
        Action::InputDown,
        Action::InputLeft,
        Action::InputRight,
        Action::InputHome,
        Action::InputEnd,
        Action::InputBackspace,
        Action::InputDelete,
        Action::InputDeleteWord,
        Action::InputClear,
    ];

    /// What the action does, in the words help shows.
    pub fn description(self) -> &'static str {
        match self {
            Action::Quit => "quit (asks if decisions are unsaved)",
            Action::ToggleHelp => "show or hide this help",
            Action::Close => "close the overlay or leave the detail",
            Action::NextPair => "next pair",
            Action::PrevPair => "previous pair",
            Action::PageDown => "page down the list",
            Action::PageUp => "page up the list",
            Action::FirstPair => "first pair",
            Action::LastPair => "last pair",
            Action::FocusNext => "move focus between list and detail",
            Action::ScrollDown => "scroll down",
            Action::ScrollUp => "scroll up",
            Action::ScrollPageDown => "scroll a page down",
            Action::ScrollPageUp => "scroll a page up",
            Action::ScrollTop => "scroll to the top",
            Action::ScrollBottom => "scroll to the bottom",
            Action::ScrollLeft => "scroll left (the summary's wide tables)",
            Action::ScrollRight => "scroll right (the summary's wide tables)",
            Action::NextChange => "jump to the next change in the diff",
            Action::PrevChange => "jump to the previous change in the diff",
            Action::ToggleAllPairs => "show all pairs or failures only",
            Action::CycleSort => {
                "sort by the next column (file order, status, case, variant, transformation, route, |Δp|, margin, category)"
            }
            Action::ReverseSort => "reverse the sort",
            Action::ToggleGroup => "group the list by source case",
            Action::ToggleFold => "fold or unfold the case under the cursor",
            Action::FoldAll => "fold or unfold every case",
            Action::ToggleSideBySide => "side-by-side source and variant",
            Action::ToggleRaw => "raw JSON of the whole record",
            Action::ToggleProblems => "list the problems found in the files",
            Action::ClearCategory => "clear the category of the pair (or marked pairs)",
            Action::AcceptSuggestion => "accept the suggested category",
            Action::AcceptAllSuggestions => {
                "accept suggestions for every unclassified pair in view"
            }
            Action::ClassifyView => "give every pair in view the category you pick next",
            Action::NextDisagreement => {
                "jump to the next pair whose reviewers disagree, with no resolution"
            }
            Action::ResolveDisagreement => {
                "resolve the reviewers' disagreement on the pair with the category you pick next"
            }
            Action::ToggleMark => "mark or unmark the pair and move down",
            Action::ClearMarks => "clear all marks",
            Action::EditNote => "write a note on the pair",
            Action::CarryDecisions => {
                "with --baseline: copy the baseline's decisions on pairs that still fail with identical inputs into this run's journal (asks first)"
            }
            Action::Undo => {
                "undo the last classification, note change or resolution (selects the pair and names it)"
            }
            Action::Redo => "redo (selects the pair and names it)",
            Action::ToggleUnclassified => "show unclassified failures only",
            Action::Suspend => "suspend to the shell (fg resumes)",
            Action::Reload => "reload the run from disk (annotations stay attached)",
            Action::SearchHelp => "search the help (enter keeps the filter, esc clears it)",
            Action::Confirm => "confirm",
            Action::Cancel => "cancel",
            Action::NoteSave => "save the note",
            Action::NoteCancel => {
                "cancel the edit (with changes typed, asks: press it again to discard them)"
            }
            Action::NoteNewline => "new line",
            Action::NoteLeft => "cursor left",
            Action::NoteRight => "cursor right",
            Action::NoteUp => "cursor up",
            Action::NoteDown => "cursor down",
            Action::NoteWordLeft => "word left",
            Action::NoteWordRight => "word right",
            Action::NoteHome => "start of line",
            Action::NoteEnd => "end of line",
            Action::NoteBackspace => "delete before the cursor",
            Action::NoteDelete => "delete at the cursor",
            Action::NoteDeleteWord => "delete the word before the cursor",
            Action::NoteClear => "clear the whole note",
            Action::StartQuery => "filter the list with a query (esc clears it)",
            Action::Choose => "add the chosen facet to the query",
            Action::Export => {
                "export the pairs in view: Markdown report, CSV, JSON or replay fixtures"
            }
            Action::CycleFormat => "next export format",
            Action::FuzzyJump => "jump to a case or pair by fuzzy name",
            Action::ShowFacets => {
                "counts per transformation, family, category, outcome and route move; pick one to filter"
            }
            Action::ShowSummary => "summary statistics of the pairs in view, with intervals",
            Action::InputSubmit => "accept",
            Action::InputCancel => "cancel (in the query bar: clear the query)",
            Action::InputUp => "previous entry or earlier query",
            Action::InputDown => "next entry or later query",
            Action::InputLeft => "cursor left",
            Action::InputRight => "cursor right",
            Action::InputHome => "start of the line",
            Action::InputEnd => "end of the line",
            Action::InputBackspace => "delete before the cursor",
            Action::InputDelete => "delete at the cursor",
            Action::InputDeleteWord => "delete the word before the cursor",
            Action::InputClear => "clear the line",
            Action::Classify(_) => "give the pair (or every marked pair) this category",
        }
    }

    /// The help group of the action.
    pub fn group(self) -> Group {
        use Action::*;
        match self {
            NextPair | PrevPair | PageDown | PageUp | FirstPair | LastPair | FocusNext
            | ScrollDown | ScrollUp | ScrollPageDown | ScrollPageUp | ScrollTop | ScrollBottom
            | ScrollLeft | ScrollRight | NextChange | PrevChange => Group::Move,
            ToggleAllPairs | ToggleSideBySide | ToggleRaw | ToggleProblems | ToggleUnclassified
            | CycleSort | ReverseSort | ToggleGroup | ToggleFold | FoldAll => Group::View,
            ClearCategory | AcceptSuggestion | AcceptAllSuggestions | ClassifyView | ToggleMark
            | ClearMarks | EditNote | CarryDecisions | Undo | Redo | Classify(_)
            | ResolveDisagreement => Group::Triage,
            NextDisagreement => Group::Move,
            NoteSave | NoteCancel | NoteNewline | NoteLeft | NoteRight | NoteUp | NoteDown
            | NoteWordLeft | NoteWordRight | NoteHome | NoteEnd | NoteBackspace | NoteDelete
            | NoteDeleteWord | NoteClear => Group::Note,
            Confirm | Cancel | InputSubmit | InputCancel | InputUp | InputDown | InputLeft
            | InputRight | InputHome | InputEnd | InputBackspace | InputDelete
            | InputDeleteWord | InputClear => Group::Prompt,
            StartQuery | FuzzyJump | ShowFacets | ShowSummary | Choose => Group::Find,
            Export | CycleFormat => Group::Triage,
            Quit | ToggleHelp | Close | Suspend | Reload | SearchHelp => Group::General,
        }
    }

    /// The keymap name of the action.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}
