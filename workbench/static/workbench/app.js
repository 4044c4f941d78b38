// The workbench's one script (no inline scripts: the Content-Security-Policy forbids them).
// Ask, and a question in a conversation: the answer streams in as plain text, then is replaced
// by the server-rendered answer (Markdown rendered safely, source cards). Everything else is
// htmx attributes.
"use strict";

(function () {
  function parseFrames(buffer, onEvent) {
    // Server-Sent Events frames: "event: NAME\ndata: JSON\n\n"; returns the unfinished rest.
    let cut;
    while ((cut = buffer.indexOf("\n\n")) !== -1) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
    return buffer;
  }

  function showResult(target, html) {
    target.innerHTML = html; // rendered by the server's templates: escaped, sanitised
    if (window.htmx) window.htmx.process(target);
  }

  function element(tag, className) {
    const made = document.createElement(tag);
    if (className) made.className = className;
    return made;
  }

  function streamingBox(target) {
    target.innerHTML = "";
    const article = element("article", "answer look-streaming");
    article.dataset.look = "streaming";
    const body = element("div", "answer-body streaming-text");
    article.appendChild(body);
    target.appendChild(article);
    return body;
  }

  // The page's texts in its language: base.html renders them, translated, into the data
  // attributes of #workbench-texts; `{name}` in a text is replaced from `values`.
  function uiText(key, values) {
    const texts = document.getElementById("workbench-texts");
    let found = (texts && texts.dataset[key]) || key;
    for (const name in values || {}) found = found.split("{" + name + "}").join(values[name]);
    return found;
  }

  function foundText(data) {
    return data.mode === "no_answer" ? uiText("noSource")
      : uiText(data.sources === 1 ? "foundOne" : "foundMany", {count: data.sources});
  }

  // POSTs the form to its data-stream-url and hands each event to onEvent, which returns true
  // for the event that completes the answer.
  async function streamForm(form, status, button, onEvent) {
    const body = new FormData(form);
    button.disabled = true;
    let finished = false;
    const handle = function (name, data) {
      if (onEvent(name, data)) finished = true;
    };
    try {
      const response = await fetch(form.dataset.streamUrl, {
        method: "POST", body: body, credentials: "same-origin",
        headers: {"X-CSRFToken": body.get("csrfmiddlewaretoken"), "Accept": "text/event-stream"},
      });
      if (response.redirected || !response.body) { window.location.reload(); return false; }
      const type = response.headers.get("Content-Type") || "";
      if (!type.startsWith("text/event-stream")) {
        // Refused before the view ran (an expired CSRF token, a server error): no events.
        status.textContent = uiText("requestFailed", {status: response.status});
        return false;
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        buffer = parseFrames(buffer + decoder.decode(chunk.value, {stream: true}), handle);
      }
      parseFrames(buffer + decoder.decode() + "\n\n", handle);
      if (!finished) {
        status.textContent = uiText("cutOff");
      }
    } catch (error) {
      status.textContent = uiText("connectionFailed", {message: error.message});
    } finally {
      button.disabled = false;
    }
    return finished;
  }

  function ask(form) {
    const target = document.getElementById("answer");
    const status = document.getElementById("ask-status");
    let textBox = null;
    status.textContent = uiText("searching");
    return streamForm(form, status, document.getElementById("ask-submit"), function (name, data) {
      if (name === "status") {
        status.textContent = foundText(data);
        textBox = streamingBox(target);
      } else if (name === "delta") {
        if (!textBox) textBox = streamingBox(target);
        textBox.appendChild(document.createTextNode(data.text));
      } else if (name === "result") {
        showResult(target, data.html);
        status.textContent = "";
        return true;
      } else if (name === "invalid") {
        status.textContent = uiText("writeQuestion");
        return true;
      }
      return false;
    });
  }

  function askInConversation(form) {
    const thread = document.getElementById("thread");
    const status = document.getElementById("conversation-status");
    const box = form.elements.namedItem("question");
    if (!box.value.trim()) {
      status.textContent = uiText("writeQuestion");
      return null;
    }
    // The question shows at once at the end of the thread; its answer streams in below it.
    const slot = element("div", "turn-slot");
    const turn = element("section", "turn");
    const question = element("div", "question");
    const text = element("p", "question-text");
    text.textContent = box.value.trim();
    question.appendChild(text);
    const answer = element("div");
    turn.appendChild(question);
    turn.appendChild(answer);
    slot.appendChild(turn);
    thread.appendChild(slot);
    const empty = document.getElementById("thread-empty");
    if (empty) empty.remove();
    slot.scrollIntoView({block: "nearest"});
    let textBox = null;
    status.textContent = uiText("searching");
    const button = document.getElementById("conversation-submit");
    return streamForm(form, status, button, function (name, data) {
      if (name === "status") {
        if (data.condensation && data.condensation !== "as_asked") {
          const searched = element("p", "searched-as");
          searched.textContent = uiText("searchedAs", {query: data.standalone_query});
          question.appendChild(searched);
        }
        status.textContent = foundText(data);
        textBox = streamingBox(answer);
      } else if (name === "delta") {
        if (!textBox) textBox = streamingBox(answer);
        textBox.appendChild(document.createTextNode(data.text));
      } else if (name === "notice") {
        status.textContent = uiText("llmUnavailable");
      } else if (name === "result") {
        showResult(slot, data.html);
        box.value = "";
        const label = form.querySelector('label[for="id_question"]');
        if (label) label.textContent = uiText("followUp");
        status.textContent = "";
        const title = document.getElementById("conversation-title");
        if (data.title && title) title.textContent = data.title;
        // The list beside the thread, rendered again: this conversation's new count and title.
        const list = document.getElementById("conversation-list");
        if (data.conversations && list) list.innerHTML = data.conversations;
        return true;
      } else if (name === "invalid") {
        slot.remove();
        status.textContent = uiText("writeQuestion");
        return true;
      }
      return false;
    });
  }

  function streamOnSubmit(id, handler) {
    const form = document.getElementById(id);
    if (!form) return;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      handler(form);
    });
  }

  // The top bar's menu, folded behind its button on a phone's width (app.css); without this
  // script the menu simply wraps.
  function foldMenu() {
    const toggle = document.querySelector(".topbar .nav-toggle");
    if (!toggle) return;
    const bar = toggle.closest(".topbar");
    bar.classList.add("foldable");
    toggle.addEventListener("click", function () {
      const open = bar.classList.toggle("menu-open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    foldMenu();
    streamOnSubmit("ask-form", ask);
    streamOnSubmit("conversation-form", askInConversation);
    // Elements that ask to be scrolled into view (the highlighted chunk of a source view).
    const focus = document.querySelector("[data-scroll-into-view]");
    if (focus) focus.scrollIntoView({block: "center"});
  });
})();
