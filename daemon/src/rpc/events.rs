//! `callEvents` (the events of a call made with `progress: true`) and `answerElicitation` (a
//! caller's answer to a question its call's server asked), answered by the events service.

use tool_cli_protocol::methods::name;

use super::{Access, Methods};

/// Registers `callEvents` and `answerElicitation`.
pub(super) fn register(methods: &mut Methods) {
    use Access::Anyone;
    methods.add(name::CALL_EVENTS, Anyone, |s, p, c| async move {
        s.events.call_events(p, &c).await
    });
    methods.add(name::ANSWER_ELICITATION, Anyone, |s, p, c| async move {
        s.events.answer_elicitation(p, &c)
    });
}
