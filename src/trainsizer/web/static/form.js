// Shows the inputs that matter for the current choices; the form works without it (all inputs shown).
(function () {
  "use strict";
  var form = document.getElementById("job-form");
  // A chosen config.json also travels as the hidden `model_json` (compact JSON): the language switch sends the
  // form by GET, which carries no file, so the choice would be lost there. The upload itself still wins on
  // submit; a file that is not JSON is left to the upload, whose message says why.
  function carry(file) {
    if (!form || !file || !window.FileReader) { return; }
    var reader = new FileReader();
    reader.onload = function () {
      var text;
      try { text = JSON.stringify(JSON.parse(reader.result)); } catch (e) { return; }
      var hidden = form.querySelector("input[name='model_json']");
      if (!hidden) {
        hidden = document.createElement("input");
        hidden.type = "hidden";
        hidden.name = "model_json";
        form.appendChild(hidden);
      }
      hidden.value = text;
      var preset = form.querySelector("input[name='model']");
      if (preset) { preset.value = ""; }  // the file replaces the preset (its help says so), after a switch too
    };
    reader.readAsText(file);
  }
  // A file input in the page's language: the native control (its words are the browser's) is kept for the
  // keyboard and the form, out of sight; the label beside it opens it and the chosen file's name is shown.
  document.querySelectorAll(".file-pick[data-for]").forEach(function (pick) {
    var input = document.getElementById(pick.getAttribute("data-for"));
    var name = pick.querySelector(".file-name");
    if (!input || !name) { return; }
    input.classList.add("file-native");
    pick.classList.remove("hidden");
    input.addEventListener("change", function () {
      var file = input.files && input.files.length ? input.files[0] : null;
      name.textContent = file ? file.name : name.getAttribute("data-none");
      carry(file);
    });
  });
  if (!form) { return; }
  function checked(name) {
    var el = form.querySelector("input[name='" + name + "']:checked");
    return el ? el.value : "";
  }
  function update() {
    var kind = checked("data_kind") || "tokens";
    form.querySelectorAll(".group[data-kind]").forEach(function (g) {
      g.querySelectorAll(".field").forEach(function (f) {
        // A field with a message stays in view whatever is chosen.
        f.classList.toggle("hidden", g.getAttribute("data-kind") !== kind && !f.classList.contains("invalid"));
      });
    });
    var method = form.querySelector("select[name='method']").value;
    form.querySelectorAll("[data-field='lora.rank'], [data-field='lora.targets']").forEach(function (f) {
      f.classList.toggle("hidden", method !== "lora" && method !== "qlora" && !f.classList.contains("invalid"));
    });
  }
  form.addEventListener("change", update);
  update();
})();
