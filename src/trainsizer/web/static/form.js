// Shows the inputs that matter for the current choices; the form works without it (all inputs shown).
(function () {
  "use strict";
  // A file input in the page's language: the native control (its words are the browser's) is kept for the
  // keyboard and the form, out of sight; the label beside it opens it and the chosen file's name is shown.
  document.querySelectorAll(".file-pick[data-for]").forEach(function (pick) {
    var input = document.getElementById(pick.getAttribute("data-for"));
    var name = pick.querySelector(".file-name");
    if (!input || !name) { return; }
    input.classList.add("file-native");
    pick.classList.remove("hidden");
    input.addEventListener("change", function () {
      name.textContent = input.files && input.files.length ? input.files[0].name : name.getAttribute("data-none");
    });
  });
  var form = document.getElementById("job-form");
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
